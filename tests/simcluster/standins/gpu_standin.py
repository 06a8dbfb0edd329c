# GPU stand-in for the simulated cluster (tests/simcluster/gpu.py writes MODEL_JSON and NVBANDWIDTH_TABLE above this line).
"""GPU stand-in: nvidia-smi, nvbandwidth, all_reduce_perf, dcgmproftester12 and lspci for one fake node.

Dispatches on the name it was started as and prints what the real tool prints
for the model in MODEL_JSON (formats from the shared corpus: nvidia-smi 535/550,
nvbandwidth v0.7, nccl-tests 2.13+, lspci -vv of ConnectX-7).  nvbandwidth reads its
options as v0.7 does (boost::program_options, from NVBANDWIDTH_TABLE: the option table
tests/data/option-tables/nvbandwidth-v0.7.txt).  Every figure is derived from the model's
hardware: copies from the PCIe link each GPU trained at, peer reads and all_reduce from NVLink.
"""

import json
import os
import socket
import sys
import time

MODEL = json.loads(MODEL_JSON)  # noqa: F821 - defined by the installer's first lines
COUNT = MODEL["count"]
GPU_BUS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db", "1c", "2c", "3c", "5e", "9c", "ac", "bc", "dc"]
NIC_BUS = ["17", "29", "39", "5c", "99", "aa", "b9", "da", "1b", "2b", "3b", "5b", "9b", "a9", "bb", "d9"]
GT_S = {1: "2.5", 2: "5", 3: "8", 4: "16", 5: "32", 6: "64"}
PCIE_ONLY = {frozenset(p) for p in MODEL["pcie_only_pairs"]}
SLOW = {frozenset((a, b)): v for a, b, v in MODEL["slow_pairs"]}
INACTIVE = set(MODEL["inactive"])
IDLE = set(MODEL["idle"])
MAX_GEN = MODEL.get("max_generation", 5)
# A running host copy leaves a file named by its pid here (the node's own /tmp).
LOAD_DIR = "/tmp/.gpu-standin-load"


def bus_id(i):
    return f"00000000:{GPU_BUS[i].upper()}:00.0"


def uuid(i):
    return f"GPU-5f3c1a2b-0000-4000-8000-{i:012d}"


def under_load(prefix=""):
    """True while an nvbandwidth host copy (or, with ``prefix`` "gemm-", a GEMM) runs on this node
    (real GPUs wake to P0 for it)."""
    try:
        names = os.listdir(LOAD_DIR)
    except OSError:
        return False
    for name in names:
        if not name.startswith(prefix):
            continue
        try:
            os.kill(int(name.rpartition("-")[2]), 0)
            return True
        except (ValueError, OSError):
            continue
    return False


def trained(i):
    """(generation, width) GPU i's link trained at: what it runs at when busy."""
    gen, width = MODEL["pcie"].get(str(i), (MAX_GEN, 16))
    return gen, width


def resting(i):
    """An idle GPU in power saving: not busy and nothing copying."""
    return i in IDLE and not under_load()


def link(i):
    """(current generation, max generation, current width, max width) of GPU i."""
    gen, width = trained(i)
    if resting(i):
        gen = 1  # power saving: an idle H100 trains its link down to Gen1
    return gen, MAX_GEN, width, 16


def pstate(i):
    return "P8" if resting(i) else "P0"


# ----------------------------------------------------------------- nvidia-smi


def fabric(i):
    """(state, status) of GPU i's NVLink fabric registration (an HGX's NVSwitch fabric manager)."""
    return tuple(MODEL.get("fabric", {}).get(str(i), ("Completed", "Success")))


def memory(i):
    """(uncorrectable volatile DRAM ECC errors, row remap pending) of GPU i."""
    errors, pending = MODEL.get("memory", {}).get(str(i), (0, False))
    return errors, pending


# How many times this install's nvidia-smi printed the replay counters (the node's own /tmp),
# keyed by the installed program's mtime so that a new install starts from its model's counts.
REPLAY_STATE = "/tmp/.gpu-standin-replays.json"
_replay_reads = None


def replay_reads():
    """The reads of the replay counters before this one (0 the first time), counted once a process."""
    global _replay_reads
    if _replay_reads is None:
        key = str(os.stat(sys.argv[0]).st_mtime_ns)
        try:
            with open(REPLAY_STATE) as f:
                state = json.load(f)
        except (OSError, ValueError):
            state = {}
        _replay_reads = state.get("reads", 0) if state.get("key") == key else 0
        with open(REPLAY_STATE, "w") as f:
            json.dump({"key": key, "reads": _replay_reads + 1}, f)
    return _replay_reads


def replays(i):
    """PCIe Replays Since Reset of GPU i: its model's start, plus its growth on every earlier read."""
    start, growth = MODEL.get("replays", {}).get(str(i), (0, 0))
    return start + growth * replay_reads() if (start or growth) else 0


def smi_xml():
    out = [
        '<?xml version="1.0" ?>',
        '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">',
        "<nvidia_smi_log>",
        "\t<timestamp>Tue Mar  4 09:12:44 2025</timestamp>",
        f"\t<driver_version>{MODEL['driver']}</driver_version>",
        f"\t<cuda_version>{MODEL['cuda']}</cuda_version>",
        f"\t<attached_gpus>{COUNT}</attached_gpus>",
    ]
    for i in range(COUNT):
        gen, max_gen, width, max_width = link(i)
        out += [
            f'\t<gpu id="{bus_id(i)}">',
            f"\t\t<product_name>{MODEL['model']}</product_name>",
            "\t\t<product_brand>NVIDIA</product_brand>",
            "\t\t<product_architecture>Hopper</product_architecture>",
            "\t\t<mig_mode>\n\t\t\t<current_mig>Disabled</current_mig>\n\t\t\t<pending_mig>Disabled</pending_mig>\n\t\t</mig_mode>",
            "\t\t<mig_devices>\n\t\t\tNone\n\t\t</mig_devices>",
            f"\t\t<serial>16550220054{i:02d}</serial>",
            f"\t\t<uuid>{uuid(i)}</uuid>",
            f"\t\t<minor_number>{i}</minor_number>",
            f"\t\t<gpu_module_id>{i + 1}</gpu_module_id>",
            "\t\t<pci>",
            f"\t\t\t<pci_bus>{GPU_BUS[i].upper()}</pci_bus>",
            "\t\t\t<pci_device>00</pci_device>",
            "\t\t\t<pci_domain>0000</pci_domain>",
            "\t\t\t<pci_device_id>233010DE</pci_device_id>",
            f"\t\t\t<pci_bus_id>{bus_id(i)}</pci_bus_id>",
            "\t\t\t<pci_sub_system_id>16C110DE</pci_sub_system_id>",
            "\t\t\t<pci_gpu_link_info>",
            "\t\t\t\t<pcie_gen>",
            f"\t\t\t\t\t<max_link_gen>{max_gen}</max_link_gen>",
            f"\t\t\t\t\t<current_link_gen>{gen}</current_link_gen>",
            f"\t\t\t\t\t<device_current_link_gen>{gen}</device_current_link_gen>",
            f"\t\t\t\t\t<max_device_link_gen>{max_gen}</max_device_link_gen>",
            "\t\t\t\t\t<max_host_link_gen>N/A</max_host_link_gen>",
            "\t\t\t\t</pcie_gen>",
            "\t\t\t\t<link_widths>",
            f"\t\t\t\t\t<max_link_width>{max_width}x</max_link_width>",
            f"\t\t\t\t\t<current_link_width>{width}x</current_link_width>",
            "\t\t\t\t</link_widths>",
            "\t\t\t</pci_gpu_link_info>",
            f"\t\t\t<replay_counter>{replays(i)}</replay_counter>",
            "\t\t\t<replay_rollover_counter>0</replay_rollover_counter>",
            "\t\t</pci>",
            f"\t\t<performance_state>{pstate(i)}</performance_state>",
            "\t\t<ecc_mode>\n\t\t\t<current_ecc>Enabled</current_ecc>\n\t\t\t<pending_ecc>Enabled</pending_ecc>\n\t\t</ecc_mode>",
            "\t\t<ecc_errors>\n\t\t\t<volatile>",
            "\t\t\t\t<sram_correctable>0</sram_correctable>",
            "\t\t\t\t<sram_uncorrectable_parity>0</sram_uncorrectable_parity>",
            "\t\t\t\t<sram_uncorrectable_secded>0</sram_uncorrectable_secded>",
            "\t\t\t\t<dram_correctable>0</dram_correctable>",
            f"\t\t\t\t<dram_uncorrectable>{memory(i)[0]}</dram_uncorrectable>",
            "\t\t\t</volatile>\n\t\t</ecc_errors>",
            "\t\t<remapped_rows>",
            "\t\t\t<remapped_row_corr>0</remapped_row_corr>",
            f"\t\t\t<remapped_row_unc>{1 if memory(i)[1] else 0}</remapped_row_unc>",
            f"\t\t\t<remapped_row_pending>{'Yes' if memory(i)[1] else 'No'}</remapped_row_pending>",
            "\t\t\t<remapped_row_failure>No</remapped_row_failure>",
            "\t\t</remapped_rows>",
            "\t\t<fabric>",
            f"\t\t\t<state>{fabric(i)[0]}</state>",
            f"\t\t\t<status>{fabric(i)[1]}</status>",
            "\t\t</fabric>",
            "\t</gpu>",
        ]
    out.append("</nvidia_smi_log>")
    return "\n".join(out) + "\n"


def kv(indent, key, value):
    return f"{' ' * indent}{key:<{42 - indent}}: {value}"


def smi_q():
    out = [
        "",
        "==============NVSMI LOG==============",
        "",
        kv(0, "Timestamp", "Tue Mar  4 09:12:44 2025"),
        kv(0, "Driver Version", MODEL["driver"]),
        kv(0, "CUDA Version", MODEL["cuda"]),
        "",
        kv(0, "Attached GPUs", COUNT),
    ]
    for i in range(COUNT):
        gen, max_gen, width, max_width = link(i)
        out += [
            f"GPU {bus_id(i)}",
            kv(4, "Product Name", MODEL["model"]),
            kv(4, "Product Brand", "NVIDIA"),
            kv(4, "Product Architecture", "Hopper"),
            "    MIG Mode",
            kv(8, "Current", "Disabled"),
            kv(8, "Pending", "Disabled"),
            kv(4, "Serial Number", f"16550220054{i:02d}"),
            kv(4, "GPU UUID", uuid(i)),
            kv(4, "Minor Number", i),
            kv(4, "Module ID", i + 1),
            "    PCI",
            kv(8, "Bus", f"0x{GPU_BUS[i].upper()}"),
            kv(8, "Device", "0x00"),
            kv(8, "Domain", "0x0000"),
            kv(8, "Device Id", "0x233010DE"),
            kv(8, "Bus Id", bus_id(i)),
            kv(8, "Sub System Id", "0x16C110DE"),
            "        GPU Link Info",
            "            PCIe Generation",
            kv(16, "Max", max_gen),
            kv(16, "Current", gen),
            kv(16, "Device Current", gen),
            kv(16, "Device Max", max_gen),
            kv(16, "Host Max", "N/A"),
            "            Link Width",
            kv(16, "Max", f"{max_width}x"),
            kv(16, "Current", f"{width}x"),
            kv(8, "Replays Since Reset", replays(i)),
            kv(8, "Replay Number Rollovers", 0),
            kv(4, "Fan Speed", "N/A"),
            kv(4, "Performance State", pstate(i)),
            "    ECC Mode",
            kv(8, "Current", "Enabled"),
            "    ECC Errors",
            "        Volatile",
            kv(12, "SRAM Correctable", 0),
            kv(12, "SRAM Uncorrectable Parity", 0),
            kv(12, "SRAM Uncorrectable SEC-DED", 0),
            kv(12, "DRAM Correctable", 0),
            kv(12, "DRAM Uncorrectable", memory(i)[0]),
            "    Remapped Rows",
            kv(8, "Correctable Error", 0),
            kv(8, "Uncorrectable Error", 1 if memory(i)[1] else 0),
            kv(8, "Pending", "Yes" if memory(i)[1] else "No"),
            kv(8, "Remapping Failure Occurred", "No"),
            "    Fabric",
            kv(8, "State", fabric(i)[0]),
            kv(8, "Status", fabric(i)[1]),
        ]
    return "\n".join(out) + "\n"


def topo_cell(a, b):
    if a == b:
        return " X "
    if frozenset((a, b)) in PCIE_ONLY:
        return MODEL["pcie_path"]
    return "NV18"


def smi_topo():
    gpus = [f"GPU{i}" for i in range(COUNT)]
    nics = [f"NIC{i}" for i in range(MODEL["nics"])]
    half = max(1, COUNT // 2)

    def numa(i):
        return 0 if i < half else 1

    def gpu_nic(g, n):
        if str(g) in MODEL.get("nic_path", {}):  # a GPU that reaches every NIC over this path
            return MODEL["nic_path"][str(g)]
        if n == MODEL.get("nic_of", {}).get(str(g), g):
            return "PIX"
        return "NODE" if numa(g) == numa(n) else "SYS"

    header = "\t\x1b[4m" + "\t".join(gpus + nics + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]) + "\x1b[0m"
    lines = [header]
    for g in range(COUNT):
        cells = [topo_cell(g, b) for b in range(COUNT)] + [gpu_nic(g, n) for n in range(len(nics))]
        cpus = "0-55,112-167" if numa(g) == 0 else "56-111,168-223"
        lines.append("\t".join([gpus[g]] + cells + [cpus, str(numa(g)), "", "N/A"]))
    for n in range(len(nics)):
        cells = [gpu_nic(g, n) for g in range(COUNT)]
        cells += [" X " if m == n else ("NODE" if numa(m) == numa(n) else "SYS") for m in range(len(nics))]
        lines.append("\t".join([nics[n]] + cells))
    lines += [
        "",
        "Legend:",
        "",
        "  X    = Self",
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
        "  PIX  = Connection traversing at most a single PCIe bridge",
        "  NV#  = Connection traversing a bonded set of # NVLinks",
        "",
        "NIC Legend:",
        "",
    ]
    lines += [f"  NIC{n}: mlx5_{n}" for n in range(len(nics))]
    return "\n".join(lines) + "\n\n"


def smi_nvlink():
    out = []
    for i in range(COUNT):
        out.append(f"GPU {i}: {MODEL['model']} (UUID: {uuid(i)})")
        if i in INACTIVE:
            out.append("NVML: Unable to retrieve NVLink information as all links are inactive")
            continue
        out += [f"\t Link {k}: 26.562 GB/s" for k in range(18)]
    return "\n".join(out) + "\n"


QUERY_UNITS = {"utilization.gpu": "%", "memory.used": "MiB", "memory.total": "MiB", "power.draw": "W", "clocks.sm": "MHz"}


REASON_BITS = {"gpu_idle": 0x1, "applications_clocks_setting": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
               "sync_boost": 0x10, "sw_thermal_slowdown": 0x20, "hw_thermal_slowdown": 0x40,
               "hw_power_brake_slowdown": 0x80, "display_clock_setting": 0x100}


def gemm_running():
    """True while a dcgmproftester load runs on this node (its marker file names the pid)."""
    return under_load("gemm-")


def clock_events(i):
    """GPU i's active clock-event reasons now: idle when nothing runs; under a GEMM every GPU is at
    its power cap (as a full tensor-core load puts a real board), plus the faults the model sets."""
    if not gemm_running():
        return {"gpu_idle"} if resting(i) or not under_load() else set()
    return {"sw_power_cap"} | set(MODEL.get("throttle_under_load", {}).get(str(i), []))


def reason_value(field, i):
    """clocks_event_reasons.X (R535+) or clocks_throttle_reasons.X (older), as the model's driver names them."""
    prefix, _, reason = field.rpartition(".")
    if prefix != MODEL.get("clock_event_prefix", "clocks_event_reasons") or (reason not in REASON_BITS
                                                                              and reason not in ("active", "supported")):
        return None
    active = clock_events(i)
    if reason == "active":
        return f"0x{sum(REASON_BITS[r] for r in active):016X}"
    if reason == "supported":
        return "0x00000000000001FF"
    return "Active" if reason in active else "Not Active"


def query_value(field, i):
    if "_reasons." in field:
        return reason_value(field, i)
    gen, max_gen, width, max_width = link(i)
    values = {
        "index": i,
        "name": MODEL["model"],
        "uuid": uuid(i),
        "pci.bus_id": bus_id(i),
        "driver_version": MODEL["driver"],
        "pstate": pstate(i),
        "utilization.gpu": 0 if resting(i) else 100,
        "pcie.link.gen.current": gen,
        "pcie.link.gen.max": max_gen,
        "pcie.link.gen.gpucurrent": gen,
        "pcie.link.gen.gpumax": max_gen,
        "pcie.link.width.current": width,
        "pcie.link.width.max": max_width,
        "memory.total": 81559,
        "memory.used": 0,
        "count": COUNT,
        "clocks.sm": (1110 if clock_events(i) & {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                                                  "sw_thermal_slowdown"} else 1755) if gemm_running() else 345,
    }
    if field not in values:
        return None
    return values[field]


def smi_query(fields, fmt):
    fields = [f.strip() for f in fields.split(",") if f.strip()]
    options = set(fmt.split(","))
    for field in fields:
        if query_value(field, 0) is None:
            sys.stderr.write(f'Field "{field}" is not a valid field to query.\n\n')
            return 2
    rows = []
    if "noheader" not in options:
        rows.append(", ".join(f + (f" [{QUERY_UNITS[f]}]" if f in QUERY_UNITS and "nounits" not in options else "") for f in fields))
    for i in range(COUNT):
        cells = []
        for field in fields:
            value = str(query_value(field, i))
            if field in QUERY_UNITS and "nounits" not in options:
                value += f" {QUERY_UNITS[field]}"
            cells.append(value)
        rows.append(", ".join(cells))
    sys.stdout.write("\n".join(rows) + "\n")
    return 0


def nvidia_smi(args):
    if not args or args == ["-L"] or args == ["--list-gpus"]:
        sys.stdout.write("".join(f"GPU {i}: {MODEL['model']} (UUID: {uuid(i)})\n" for i in range(COUNT)))
        return 0
    flags = set(args)
    if "-q" in flags or "--query" in flags:
        sys.stdout.write(smi_xml() if ("-x" in flags or "--xml-format" in flags) else smi_q())
        return 0
    if args[0] == "topo" and ({"-m", "--matrix"} & flags):
        sys.stdout.write(smi_topo())
        return 0
    if args[0] == "nvlink" and ({"-s", "--status"} & flags):
        sys.stdout.write(smi_nvlink())
        return 0
    query = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
    fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), None)
    if query is not None and fmt is not None and fmt.startswith("csv"):
        return smi_query(query, fmt)
    sys.stderr.write("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
    return 2


# ----------------------------------------------------------------- nvbandwidth


def copy_gbytes(i):
    """Host <-> device copy of GPU i (GB/s): its trained link's line one way x pcie_efficiency.

    Copies wake the link up to its trained speed (a resting GPU's Gen1 does not count)."""
    gen, width = trained(i)
    return MODEL["pcie_lane_gbytes"][str(gen)] * width * MODEL["pcie_efficiency"]


def local_copy(i):
    """device_local_copy of GPU i (GB/s): half its HBM line (each byte is read and written, counted once)
    x the copy's efficiency, x the fault's share where the model sets one."""
    return MODEL["hbm_gbytes"] / 2 * MODEL["hbm_copy_efficiency"] * MODEL.get("hbm_scale", {}).get(str(i), 1.0)


def hold_load(seconds, kind=""):
    """Keep the GPUs busy for ``seconds``, as a host copy to every GPU does (``kind`` "gemm-": a GEMM)."""
    os.makedirs(LOAD_DIR, exist_ok=True)
    marker = os.path.join(LOAD_DIR, f"{kind}{os.getpid()}")
    open(marker, "w").close()
    try:
        time.sleep(seconds)
    finally:
        os.unlink(marker)


def d2d(a, b):
    if a == b or a in INACTIVE or b in INACTIVE:
        return None
    pair = frozenset((a, b))
    if pair in SLOW:
        return SLOW[pair]
    if pair in PCIE_ONLY:
        return min(copy_gbytes(a), copy_gbytes(b))  # peer copies over PCIe, at the slower link
    # NVLink one way x the copy engines' share of it, wobbling by a few 0.01%
    return MODEL["nvlink_gbytes"] * MODEL["nvlink_ce_efficiency"] * (1 + ((a * 7 + b * 3) % 5 - 2) * 0.0002)


def matrix_lines(title, rows, columns, value):
    out = [title, "  " + "".join(f"{c:>10}" for c in columns)]
    for r in rows:
        cells = [f"{'N/A':>10}" if (v := value(r, c)) is None else f"{v:>10.2f}" for c in columns]
        out.append(f"{r:>2}" + "".join(cells))
    return out


def nvbandwidth_table():
    """nvbandwidth's options and testcases (tests/data/option-tables/nvbandwidth-*.txt, baked in by gpu.py)."""
    table = {"option": [], "testcase": [], "message": {}}
    for line in NVBANDWIDTH_TABLE.splitlines():  # noqa: F821 - defined by the installer's first lines
        if not line.strip() or line.startswith("#"):
            continue
        kind, _, rest = line.partition(" ")
        if kind in ("option", "hidden"):
            name, short, value, default, desc = rest.split(" ", 4)
            table["option"].append({"name": name, "short": None if short == "-" else short, "value": value,
                                    "default": None if default == "-" else default, "desc": desc,
                                    "visible": kind == "option"})
        elif kind == "testcase":
            words = rest.split()
            if "multinode" not in words[1:]:  # a single-node build
                table["testcase"].append(words[0])
        elif kind == "message":
            name, _, quoted = rest.partition(" ")
            table["message"][name] = json.loads(quoted)
        elif kind == "version":
            table["version"] = rest.strip()
    return table


class InvalidArguments(Exception):
    """Whatever boost::program_options throws; nvbandwidth's catch (...) does not say which."""


def boost_parse(args, options):
    """boost::program_options parse_command_line, default style: --long, --long=value, --long value,
    unique prefixes of long names (allow_guessing), -s, -svalue, -s value, -abc for switches
    (allow_sticky); multitoken values take the words up to the next option; no positional options."""
    by_short = {o["short"]: o for o in options if o["short"]}
    values = {}

    def take(option, inline, i):
        if option["value"] == "switch":
            if inline is not None:
                raise InvalidArguments(option["name"])
            values[option["name"]] = True
            return i
        if inline is not None:
            got = [inline]
        elif i < len(args) and not args[i].startswith("-"):
            got = [args[i]]
            i += 1
        else:
            raise InvalidArguments(option["name"])
        if option["value"] == "strings":
            while i < len(args) and not args[i].startswith("-"):
                got.append(args[i])
                i += 1
            values.setdefault(option["name"], []).extend(got)
            return i
        if len(got) != 1 or not got[0].isdigit() or option["name"] in values:
            raise InvalidArguments(option["name"])  # a number (lexical_cast), given once
        values[option["name"]] = int(got[0])
        return i

    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("--") and len(arg) > 2:
            name, eq, inline = arg[2:].partition("=")
            exact = [o for o in options if o["name"] == name]
            found = exact or [o for o in options if o["name"].startswith(name)]
            if len(found) != 1:
                raise InvalidArguments(arg)
            i = take(found[0], inline if eq else None, i)
        elif arg.startswith("-") and len(arg) > 1:
            option = by_short.get(arg[1])
            if option is None:
                raise InvalidArguments(arg)
            rest = arg[2:]
            while rest and option["value"] == "switch":  # -vj: sticky switches
                take(option, None, i)
                option = by_short.get(rest[0])
                if option is None:
                    raise InvalidArguments(arg)
                rest = rest[1:]
            i = take(option, rest or None, i)
        else:
            raise InvalidArguments(arg)  # no positional options are declared
    return values


def options_description(table):
    """The visible options as boost prints an options_description (caption, then one line each)."""
    rows = []
    for o in table["option"]:
        if not o["visible"]:
            continue
        name = f"-{o['short']} [ --{o['name']} ]" if o["short"] else f"--{o['name']}"
        param = "" if o["value"] == "switch" else "arg" + (f" (={o['default']})" if o["default"] else "")
        rows.append((f"  {name} {param}", o["desc"]))
    width = min(max([23] + [len(left) for left, _ in rows]), 80 - 40 - 1) + 1
    lines = [table["message"]["caption"] + ":"]
    for left, desc in rows:
        lines.append(left + "\n" + " " * width + desc if len(left) >= width else left.ljust(width) + desc)
    return "\n".join(lines) + "\n"


def nvbandwidth(args):
    table = nvbandwidth_table()
    version_lines = [f"nvbandwidth Version: {MODEL['nvbandwidth_version']}",
                     f"Built from Git version: {MODEL['nvbandwidth_version']}", ""]
    try:
        values = boost_parse(args, table["option"])
    except InvalidArguments:
        command = "".join(f"{word} " for word in ["nvbandwidth", *args])
        sys.stdout.write("\n".join(version_lines) + "\n" + table["message"]["invalid"] + "\n" + command
                         + ":\n\n" + options_description(table) + "\n")
        return 1
    if values.get("list"):
        sys.stdout.write("\n".join(version_lines) + "\nIndex, Name:\n\tDescription\n=======================\n"
                         + "".join(f"{i}, {key}:\n\n\n" for i, key in enumerate(table["testcase"])))
        return 0  # (the descriptions are not kept in the table)
    if values.get("help"):
        sys.stdout.write("\n".join(version_lines) + "\n" + options_description(table) + "\n\n")
        return 0
    testcases = []
    for ident in values.get("testcase", []):
        if ident.lstrip("-").isdigit():
            index = int(ident)
            if not 0 <= index < len(table["testcase"]):
                testcases.append((ident, table["message"]["out_of_bound"].format(id=ident)))
                continue
            ident = table["testcase"][index]
        if ident not in table["testcase"]:
            testcases.append((ident, table["message"]["not_found"].format(id=ident)))
            continue
        testcases.append((ident, None))
    out = [
        f"nvbandwidth Version: {MODEL['nvbandwidth_version']}",
        f"Built from Git version: {MODEL['nvbandwidth_version']}",
        "",
        f"CUDA Runtime Version: {int(MODEL['cuda'].split('.')[0]) * 1000 + int(MODEL['cuda'].split('.')[1]) * 10}",
        f"CUDA Driver Version: {int(MODEL['cuda'].split('.')[0]) * 1000 + int(MODEL['cuda'].split('.')[1]) * 10}",
        f"Driver Version: {MODEL['driver']}",
        "",
    ]
    out += [f"Device {i}: {MODEL['model']} ({bus_id(i)[:-2].lower()})" for i in range(COUNT)]
    out.append("")
    gpus = list(range(COUNT))
    for name, error in testcases or [("device_to_device_memcpy_read_ce", None)]:
        if error is not None:
            out.append(error)  # nvbandwidth says so and goes on with the next testcase
            continue
        out.append(f"Running {name}.")
        if name == "device_to_device_memcpy_read_ce":
            out += matrix_lines("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)", gpus, gpus, d2d)
            total = sum(v for a in gpus for b in gpus if (v := d2d(a, b)) is not None)
        elif name == "device_local_copy":
            out += matrix_lines("memcpy local GPU(column) bandwidth (GB/s)", [0], gpus, lambda _r, c: local_copy(c))
            total = sum(local_copy(c) for c in gpus)
        elif name in ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "host_to_all_memcpy_ce"):
            if name == "host_to_all_memcpy_ce":
                hold_load(MODEL.get("load_seconds", 1.0))  # every GPU copies at once, for a while
            arrow = "->" if name.startswith("host") else "<-"
            out += matrix_lines(f"memcpy CE CPU(row) {arrow} GPU(column) bandwidth (GB/s)", [0], gpus,
                                lambda _r, c: copy_gbytes(c))
            total = sum(copy_gbytes(c) for c in gpus)
        else:
            sys.stdout.write("\n".join(out) + "\n")
            sys.stderr.write(f"gpu stand-in: nvbandwidth testcase {name} is not simulated\n")
            return 1
        out += ["", f"SUM {name} {total:.2f}", ""]
    out += [
        "NOTE: The reported results may not reflect the full capabilities of the platform.",
        "Performance can vary with software drivers, hardware clocks, and system topology.",
    ]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


# ----------------------------------------------------------------- nccl-tests


def arg_value(args, flag, default):
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag) and len(arg) > len(flag) and arg[len(flag):].isdigit():
            return arg[len(flag):]  # -g8
    return default


def nccl_busbw(ngpus):
    """all_reduce busbw over ngpus GPUs' NVLink (GB/s), as simcluster.gpu.nccl_nvlink_busbw derives it:
    NVLS (the switch reduces) up to one way x 2(n-1)/n, a ring up to one way."""
    if ngpus < 2:
        return 0.0
    if MODEL["nvls"]:
        return MODEL["nvlink_gbytes"] * 2 * (ngpus - 1) / ngpus * MODEL["nccl_nvls_efficiency"]
    return MODEL["nvlink_gbytes"] * MODEL["nccl_ring_efficiency"]


def all_reduce_perf(args):
    size = int(arg_value(args, "-b", "8"))
    ngpus = int(arg_value(args, "-g", "1"))
    host, pid = socket.gethostname(), os.getpid()
    out = [
        f"# nThread 1 nGpus {ngpus} minBytes {size} maxBytes {int(arg_value(args, '-e', size))} step: 2(factor) "
        "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    if ngpus > COUNT:
        out.append(f"{host}: Test CUDA failure common.cu:1009 'invalid device ordinal'")
        out.append(f" .. {host} pid {pid}: Test failure common.cu:891")
        sys.stdout.write("\n".join(out) + "\n")
        return 2
    for g in range(ngpus):
        out.append(f"#  Rank {g:2d} Group  0 Pid {pid:6d} on {host:>10} device {g:2d} [0x{GPU_BUS[g]}] {MODEL['model']}")
    out.append(f"{host}:{pid}:{pid} [0] NCCL INFO NCCL version {MODEL['nccl_version']}+cuda{MODEL['cuda']}")
    busbw = nccl_busbw(ngpus)
    factor = 2 * (ngpus - 1) / ngpus if ngpus > 1 else 1.0
    algbw = busbw / factor if busbw else 0.0
    time_us = size / (algbw * 1e3) if algbw else 1.0
    # Wrong results (a GPU corrupting data): nccl-tests prints the count in both halves' #wrong,
    # counts each failed check (out-of-place, in-place) in the trailer and exits 1.
    wrong = int(MODEL.get("nccl_wrong_elements", 0))
    oob = "2 FAILED" if wrong else "0 OK"
    out += [
        "#",
        "#                                                              out-of-place                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
        f"{size:12d}  {size // 4:12d}     float     sum      -1  {time_us:7.1f}  {algbw:6.2f}  {busbw:6.2f}  {wrong:5d}  "
        f"{time_us:7.1f}  {algbw:6.2f}  {busbw:6.2f}  {wrong:5d}",
        f"# Out of bounds values : {oob}",
        f"# Avg bus bandwidth    : {busbw:.4f} ",
        "#",
        "",
    ]
    sys.stdout.write("\n".join(out))
    return 1 if wrong else 0


# ----------------------------------------------------------------- dcgmproftester


def gemm_gflops(i, sample):
    """GPU i's tensor-core rate in one reading (GFLOP/s): the model's dense FP16 peak x the load's
    efficiency x the fault's share, wobbling by 0.1% from reading to reading as the recorded runs do."""
    rate = MODEL["gemm_tflops"] * 1000 * MODEL["gemm_efficiency"] * MODEL.get("gemm_scale", {}).get(str(i), 1.0)
    if MODEL.get("throttle_under_load", {}).get(str(i)):
        rate *= 1110 / 1755  # a slowed-down GPU computes at the SM clock it is held to
    return rate * (1 + ((i * 3 + sample) % 5 - 2) * 0.001)


def dcgmproftester(args):
    """dcgmproftester12 --no-dcgm-validation -t 1004 -d N, in DCGM 3.3's layout: a reading a second from
    every GPU's worker while the load runs, then each worker's bus id (tests/data/dcgmproftester)."""
    field = arg_value(args, "-t", None) or arg_value(args, "--fieldId", None)
    duration = float(arg_value(args, "-d", None) or arg_value(args, "--duration", "30"))
    if field != "1004":
        sys.stderr.write(f"gpu stand-in: dcgmproftester field {field} is not simulated\n")
        return 1
    if "--no-dcgm-validation" not in args:
        sys.stdout.write("Error: unable to establish a connection to the specified host engine.\n")
        return 1
    out = sys.stdout
    out.write("Skipping CreateDcgmGroups() since DCGM validation is disabled\n" * COUNT)
    out.write("Skipping WatchFields() since DCGM validation is disabled\n")
    out.flush()
    os.makedirs(LOAD_DIR, exist_ok=True)
    marker = os.path.join(LOAD_DIR, f"gemm-{os.getpid()}")
    open(marker, "w").close()
    try:
        start = time.monotonic()
        sample = 0
        while time.monotonic() - start < duration:
            time.sleep(min(MODEL.get("gemm_report_s", 1.0), max(0.0, duration - (time.monotonic() - start))))
            for i in range(COUNT):
                out.write(f"Worker {i}:0 [1004]: TensorEngineActive: generated ???, dcgm 0 ({gemm_gflops(i, sample):.3g} gflops).\n")
            out.flush()
            sample += 1
    finally:
        os.unlink(marker)
    for i in range(COUNT):
        out.write(f"Worker {i}:0[1004]: Message: Bus ID {bus_id(i)} mapped to cuda device ID {i}\n"
                  "DCGM CudaContext Init completed successfully.\n\n")
    out.write("Skipping UnwatchFields() since DCGM validation is disabled\n")
    return 0


# ----------------------------------------------------------------- lspci


def lspci(args):
    if "-d" in args and not args[args.index("-d") + 1].lower().startswith("15b3"):
        return 0
    out = []
    for n in range(MODEL["nics"]):
        gen, width = MODEL["nic_pcie"].get(str(n), (5, 16))
        speed_note = "ok" if gen >= 5 else "downgraded"
        width_note = "ok" if width >= 16 else "downgraded"
        out += [
            f"{NIC_BUS[n]}:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]",
            "\tSubsystem: Mellanox Technologies MT2910 Family [ConnectX-7]",
            "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+",
            "\tLatency: 0",
            f"\tNUMA node: {0 if n < MODEL['nics'] // 2 else 1}",
            "\tCapabilities: [60] Express (v2) Endpoint, MSI 00",
            "\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, L1 unlimited",
            "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported",
            "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+",
            "\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk-",
            f"\t\tLnkSta:\tSpeed {GT_S[gen]}GT/s ({speed_note}), Width x{width} ({width_note})",
            "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
            "\tKernel driver in use: mlx5_core",
            "\tKernel modules: mlx5_core",
            "",
        ]
    if "-d" not in args:
        out += acs_bridges()
    sys.stdout.write("\n".join(out))
    return 0


def acs_bridges():
    """lspci -vvv of the PCIe switch port above each GPU/NIC pair, with its ACS bits, and the GPUs."""
    sign = "+" if MODEL.get("acs_on") else "-"
    out = []
    for n in range(MODEL["nics"]):
        buses = [int(NIC_BUS[n], 16)] + ([int(GPU_BUS[n], 16)] if n < COUNT else [])
        out += [
            f"{min(buses) - 1:02x}:00.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0) (prog-if 00 [Normal decode])",
            f"\tBus: primary={min(buses) - 2:02x}, secondary={min(buses):02x}, subordinate={max(buses):02x}, sec-latency=0",
            "\tCapabilities: [220 v1] Access Control Services",
            "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+",
            f"\t\tACSCtl:\tSrcValid{sign} TransBlk- ReqRedir{sign} CmpltRedir{sign} UpstreamFwd{sign} EgressCtrl- DirectTrans-",
            "",
        ]
    for g in range(COUNT):
        out += [f"{GPU_BUS[g]}:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)", ""]
    return out


TOOLS = {"nvidia-smi": nvidia_smi, "nvbandwidth": nvbandwidth, "all_reduce_perf": all_reduce_perf, "lspci": lspci,
         "dcgmproftester": dcgmproftester}

if __name__ == "__main__":
    tool = os.path.basename(sys.argv[0])
    # A test may wrap a stand-in and call it as "nvidia-smi-real": match on the prefix too.
    run = TOOLS.get(tool) or next(f for name, f in TOOLS.items() if tool.startswith(name))
    sys.exit(run(sys.argv[1:]))
