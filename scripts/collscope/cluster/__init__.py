"""Emulated clusters (cluster/README.md): emulated (scripts/emulated-cluster), spec (what
a cluster is), network (what is made and left), harness (a cluster brought up and down
for a test or for scripts/accept-repeat)."""
