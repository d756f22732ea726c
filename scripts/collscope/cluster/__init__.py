"""Emulated clusters (cluster/README.md): spec (the flags of scripts/emulated-cluster),
network (what is made and left), harness (a cluster brought up and down for a test or for
scripts/accept-repeat)."""
