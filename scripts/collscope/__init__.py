"""collscope's Python tools, one package. The programs in scripts/ (report, merge, sweep,
accept, ...) are entry points of a few lines beside it: `python3 scripts/report` puts
scripts/ on the module path, so they import it with no path set; the tests import it
through PYTHONPATH=<repo>/scripts (ctest sets it), and a GPU bundle carries it in its
python/ folder, beside the entry points it packs.

The shared pieces:
    algorithms       the catalogue of algorithms (algorithms.def, as the build wrote it)
    results          the results files' layout (results/SCHEMA.md)
    selection_rules  the advisor's selection rules
    model            the time model's fit and accuracy (collectives/model/MODEL.md)
    accept           acceptance testing of nodes and fabrics (acceptance/README.md)
    cluster          emulated clusters (cluster/README.md) and their test harness
    checks           the ok / FAIL lines of the test scripts
    runtime_noise    Open MPI's teardown warnings, which error checks leave out
    command_line     option values that are themselves command lines
    paths            where the repository's folders are
The programs (scripts/<name>): report, merge, sweep, predict_rules, compare,
compare_tools, gpu_bundle, model.fit_model, model.check, cluster.emulated, accept.cli,
accept.reference, accept.repeat, accept.gpu_check.
"""
