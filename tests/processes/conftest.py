"""Tests that start real processes: Celery workers, Daphne servers, ``manage.py`` commands, a llama.cpp
server, interpreters of their own. ``make test`` runs this folder on its own, one test at a time (the
rest of the suite runs on two xdist workers): a process started beside a busy neighbour is what made
these tests slow, and their time limits are what a loaded machine breaks first."""
