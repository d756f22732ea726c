"""Which GPU each rank uses, and the GPUs of the run (acceptance/README.md, "GPU nodes").

A GPU is named by its host and UUID: ranks that report the same UUID on one host share
that GPU and are grouped under it (four ranks on one GPU are one GPU with four ranks).
Its `where` is "host:index (UUID)", index the CUDA ordinal its first rank uses.

The emulated device (COLLSCOPE_DEVICE_EMULATION=1) is host memory in each process: every
rank has a device of its own, all reporting index 0 and the UUID "emulated". Each rank is
therefore its own emulated GPU, named "emulated-<host>-<rank>" here (derived, not
reported), so that one rank's emulated GPU can be told from another's.
"""


class GpuLayout:
    def __init__(self, hosts, gpus):
        """hosts: each rank's host; gpus: each rank's GPU as gpu_probe reported it
        ({"index", "name", "uuid", "pci_bus_id", "emulated", ...})."""
        self.n = len(hosts)
        self.rank_hosts = list(hosts)
        self.info = [dict(g) for g in gpus]
        self.emulated = any(g.get("emulated") for g in self.info)
        self.uuid = [self.rank_uuid(r) for r in range(self.n)]
        self.keys = list(dict.fromkeys(self.key(r) for r in range(self.n)))   # order of first rank

    def rank_uuid(self, r):
        g = self.info[r]
        return f"emulated-{self.rank_hosts[r]}-{r}" if g.get("emulated") else g["uuid"]

    # ---- a rank's GPU ------------------------------------------------------------------

    def key(self, r):
        """The GPU rank r uses: (host, UUID)."""
        return (self.rank_hosts[r], self.uuid[r])

    def model(self, r):
        return self.info[r]["name"]

    def where(self, r):
        return self.where_of(self.key(r))

    def same_gpu(self, a, b):
        return self.key(a) == self.key(b)

    # ---- a GPU ---------------------------------------------------------------------------

    def ranks_of(self, key):
        return [r for r in range(self.n) if self.key(r) == key]

    def where_of(self, key):
        first = self.ranks_of(key)[0]
        return f"{key[0]}:{self.info[first]['index']} ({key[1]})"

    def model_of(self, key):
        return self.model(self.ranks_of(key)[0])

    def short(self, key):
        """A label for pictures: host:index, and the rank where several share index 0."""
        first = self.ranks_of(key)[0]
        label = f"{key[0]}:{self.info[first]['index']}"
        return f"{label} r{first}" if self.emulated else label

    def shared(self):
        """GPUs used by more than one rank."""
        return [k for k in self.keys if len(self.ranks_of(k)) > 1]

    def models(self):
        return sorted({self.model(r) for r in range(self.n)})
