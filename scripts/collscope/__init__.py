"""collscope's Python tools, one package. The programs in scripts/ (report, merge, sweep,
accept, ...) are thin entry points beside it: `python3 scripts/report` puts scripts/ on
the module path, so they import it with no path set; the tests import it through
PYTHONPATH=<repo>/scripts (ctest sets it), and a GPU bundle carries it in its python/.

    algorithms       the catalogue of algorithms (algorithms.def, as the build wrote it)
    results          the results files' layout (results/SCHEMA.md)
    selection_rules  the advisor's selection rules
    model            the time model's fit and accuracy (collectives/model/MODEL.md)
    accept           acceptance testing of nodes and fabrics (acceptance/README.md)
    cluster          emulated clusters (scripts/emulated-cluster) and their test harness
    runtime_noise    Open MPI's teardown warnings, which error checks leave out
    paths            where the repository's folders are
"""
