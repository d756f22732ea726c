"""Acceptance testing of nodes and fabrics (acceptance/README.md): scripts/accept runs
cli, scripts/accept-reference runs reference; cases and gpu_cases are the acceptance
cases that ctest runs once and scripts/accept-repeat many times."""
