"""The agent runtime: chat models, the thread checkpointer and graph assembly."""
