"""Pure compression engine: message lists in, message lists out. No ORM, no network."""
