"""Where things are, from where this package sits: <repo>/scripts/collscope (in a GPU
bundle: <bundle>/python/collscope, where only the entry points beside it are)."""
import os

PACKAGE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(PACKAGE)   # the entry points: scripts/report, scripts/merge, ...
ROOT = os.path.dirname(SCRIPTS)      # the repository
