# Software-stack stand-in for the simulated cluster (tests/simcluster/stack.py writes MODEL_JSON above this line).
"""Software-stack stand-in: ofed_info, ldconfig, uname, lsmod and dcgmi for one fake node.

Dispatches on the name it was started as. Prints what the real tool prints for the model
(ofed_info -s of MLNX_OFED 23.10, ldconfig -p, lsmod of a GPU node with nvidia_peermem,
dcgmi diag -r N of DCGM 3.3); what the model does not set goes to the real tool.
"""

import json
import os
import sys

MODEL = json.loads(MODEL_JSON)  # noqa: F821 - defined by the installer's first lines


def real(tool, args):
    here = os.path.dirname(os.path.abspath(__file__))
    for directory in os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(":") + ["/sbin", "/usr/sbin"]:
        path = os.path.join(directory, tool)
        if os.path.abspath(directory) != here and os.access(path, os.X_OK):
            os.execv(path, [path, *args])
    sys.stderr.write(f"{tool}: command not found\n")
    return 127


def ofed_info(args):
    if MODEL["ofed"] is None:
        return real("ofed_info", args)
    if args == ["-s"]:
        print(f"MLNX_OFED_LINUX-{MODEL['ofed']}:")
        return 0
    print(f"MLNX_OFED_LINUX-{MODEL['ofed']} (OFED-{MODEL['ofed']}):\n\nrdma-core:\nmlnx_ofed/rdma-core.git mlnx_ofed_23_10")
    return 0


def ldconfig(args):
    if args != ["-p"] or MODEL["nccl"] is None:
        return real("ldconfig", args)
    libs = [("libnccl.so.2", f"/usr/lib/x86_64-linux-gnu/libnccl.so.{MODEL['nccl']}"),
            ("libnccl.so", f"/usr/lib/x86_64-linux-gnu/libnccl.so.{MODEL['nccl']}"),
            ("libibverbs.so.1", "/lib/x86_64-linux-gnu/libibverbs.so.1"),
            ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")]
    # The cache lists soname links; their targets carry the version (readlink -f resolves them).
    print(f"{len(libs)} libs found in cache `/etc/ld.so.cache'")
    for soname, target in libs:
        print(f"\t{soname} (libc6,x86-64) => {target}")
    return 0


def uname(args):
    if MODEL["kernel"] is not None and args == ["-r"]:
        print(MODEL["kernel"])
        return 0
    return real("uname", args)


MODULE_SIZES = {"nvidia_peermem": (16384, 0, ""), "nvidia_uvm": (4648960, 4, ""),
                "nvidia_drm": (122880, 0, ""), "nvidia_modeset": (1306624, 1, "nvidia_drm"),
                "mlx5_ib": (462848, 0, ""), "ib_uverbs": (188416, 3, "nvidia_peermem,rdma_ucm,mlx5_ib"),
                "mlx5_core": (2330624, 1, "mlx5_ib"), "ib_core": (430080, 8, "ib_uverbs,mlx5_ib")}


def lsmod(args):
    modules = list(MODEL["modules"])
    users = [m for m in modules if m.startswith("nvidia_")]
    print("Module                  Size  Used by")
    for name in modules:
        size, count, used = MODULE_SIZES.get(name, (65536, 0, ""))
        print(f"{name:<24}{size:>8}  {count} {used}".rstrip())
    if "nvidia" not in modules:
        print(f"{'nvidia':<24}{56807424:>8}  {len(users) + 200} {','.join(users)}".rstrip())
    return 0


def dcgmi(args):
    if not args or args[0] != "diag" or "-r" not in args:
        sys.stderr.write("dcgmi stand-in: only `dcgmi diag -r LEVEL` is simulated\n")
        return 1
    level = args[args.index("-r") + 1]
    failures = {int(k): v for k, v in MODEL["dcgm_failures"].items()}  # GPU -> test that fails
    rows = [("-----  Metadata  ----------+", None), ("DCGM Version", "3.3.5"),
            ("Driver Version Detected", "550.90.07"), ("GPU Device IDs Detected", ",".join(["2330"] * MODEL["gpus"])),
            ("-----  Deployment  --------+", None)]
    rows += [(name, "Pass") for name in ("Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks",
                                         "Persistence Mode", "Environment Variables", "Page Retirement/Row Remap",
                                         "Graphics Processes", "Inforom")]
    tests = [("Integration", "PCIe")]
    if level in ("2", "3", "4"):
        tests += [("Hardware", "GPU Memory"), ("Stress", "Memory Bandwidth")]
    if level in ("3", "4"):
        tests += [("Stress", "Targeted Stress"), ("Stress", "Targeted Power")]
    section = None
    for category, name in tests:
        if category != section:
            rows.append((f"-----  {category}  " + "-" * (19 - len(category)) + "+", None))
            section = category
        failed = sorted(g for g, t in failures.items() if t == name)
        rows.append((name, f"Fail - GPU: {', '.join(map(str, failed))}" if failed else "Pass - All"))
        for gpu in failed:
            rows.append(("Warning", f"GPU {gpu} {name} test failed (stand-in)."))
    print("Successfully ran diagnostic for group.")
    print("+---------------------------+------------------------------------------------+")
    print("| Diagnostic                | Result                                         |")
    print("+===========================+================================================+")
    for left, right in rows:
        if right is None:
            print(f"|{left}------------------------------------------------|")
        else:
            print(f"| {left:<25} | {right:<46} |")
    print("+---------------------------+------------------------------------------------+")
    return 0


TOOLS = {"ofed_info": ofed_info, "ldconfig": ldconfig, "uname": uname, "lsmod": lsmod, "dcgmi": dcgmi}

if __name__ == "__main__":
    sys.exit(TOOLS[os.path.basename(sys.argv[0])](sys.argv[1:]))
