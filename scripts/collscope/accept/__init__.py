"""Acceptance testing of nodes and fabrics (acceptance/README.md): cli (scripts/accept),
reference (scripts/accept-reference), repeat (scripts/accept-repeat), gpu_check
(scripts/accept-gpu-check); cases and gpu_cases are the acceptance cases that ctest runs
once and accept-repeat many times."""
