"""A model's stored calibration (``TokenCalibration``, SPEC 4): the table, its reads and its one writer,
and the in-memory calibration the middlewares of every agent on that model share in a process. The
arithmetic is pure (``context_engine.tokens.calibration``)."""
