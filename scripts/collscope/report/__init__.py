"""scripts/report's package: a collscope results file (results/SCHEMA.md) turned into
report.md, its table pages and its PNG plots, one module per page. cli.py is the command
line (its header says what the report writes and how to call it); load.py reads the file,
formatting.py formats figures and tables; volume.py writes volume.md, textbook.py
textbook_vs_theory.md, time_model.py time_model.md, advisor.py advisor.md, layers.py
layers.md, tuning.py tuning.md, plots.py the PNGs and index.py report.md (noise.md comes from
scripts/collscope/noise.py). The names other code uses are here: `from collscope.report
import main`, `report.advise_group(rows)`; the rest is imported from its module."""

from collscope.report.advisor import TIE_VERDICT, advise_group, noise_count_lines
from collscope.report.cli import main

__all__ = ["TIE_VERDICT", "advise_group", "main", "noise_count_lines"]
