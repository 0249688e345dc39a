"""Model endpoints: the OpenAI-compatible servers agents call, each with its key variable and prices."""
