"""The "platform" app: model endpoints, agents, API tokens, knowledge bases, tools, workdir storage
and the agent runtime. Named ``agent_platform`` because a top-level ``platform`` package would shadow
the standard library."""
