"""CSV writing shared by the Siconos benchmark scripts."""


def write_csv(path, names, rows):
    """Writes `rows` (a 2-D numpy array) with a header of `names`, each
    number in Python's shortest round-trip form (as rmoc writes them)."""
    with open(path, "w") as f:
        f.write(",".join(names) + "\n")
        fmt = ",".join(["%r"] * len(names)) + "\n"
        f.writelines(fmt % tuple(r) for r in rows.tolist())
