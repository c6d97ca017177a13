"""Stand-in verl package (tests only; see tests/integration/verl_standin/README.md)."""
