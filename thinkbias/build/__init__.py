"""Set-up tooling that runs before the project's environment exists (standard library only)."""
