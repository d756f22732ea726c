"""Command-line pieces the programs share."""


def join_command_line_values(argv, options):
    """argv with each of OPTIONS and the word after it joined into OPTION=VALUE: the value
    is itself a command line ("--mpirun-args --oversubscribe" is one option and its value,
    though the value starts with a dash, which argparse would refuse)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in options and i + 1 < len(argv):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out
