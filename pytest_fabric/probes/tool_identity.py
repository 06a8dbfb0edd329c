"""Which binary each tool name is on a node: one listing per node per run.

The provider installs the tools and has root: a tool's own ``--version`` says what the provider's
file says. This listing asks the node instead what file runs (``command -v``, ``readlink -f``), its
SHA-256, its ELF build id (a script where an ELF is expected shows as a ``#!`` line), the package
that owns it and the package manager's own verification of that file (``dpkg --verify`` /
``rpm -V``), and what every process preloads (``LD_PRELOAD``, ``/etc/ld.so.preload``). What it
proves, and what it cannot (a kernel that lies to ``sha256sum``), is in docs/report.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from pytest_fabric.parsers import tool_identity
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.once import Once
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import join

__all__ = ["ONCE_KIND", "TOOL_IDENTITY_SCRIPT", "identity_command", "read_identity"]

ONCE_KIND = "tool identity"

# Shell syntax owned here; the tool names are the only values and arrive quoted by join().
# Every run lists every node at once, so its cost is paid per node: each dpkg -S reads dpkg's whole file
# database (about 70 ms of CPU), and a file no package owns (a stand-in in /usr/local/bin) was searched
# twice. One dpkg -S answers every resolved and PATH path first, and each tool reads its line there, but
# only where that line is what its own dpkg -S would print first: every answer line names one path asked
# (each once), no path has a wildcard or ': ' in it. A diversion prints more lines for its path (and
# names the other path), so where one shows up each tool is searched alone as before. dpkg --verify and
# rpm -V run once per package (tools of one package: perftest's). The lines printed are the same.
TOOL_IDENTITY_SCRIPT = r"""N='
'
S=; B=0; Q=$N; n=0
if command -v dpkg >/dev/null 2>&1; then
set --
for t in {TOOLS}; do
  p=$(command -v -- "$t" 2>/dev/null) || p=
  case "$p" in /*) r=$(readlink -f -- "$p" 2>/dev/null) || r=$p ;; *) continue ;; esac
  for a in "$r" "$p"; do case "$Q" in *"$N$a$N"*) ;; *) Q=$Q$a$N; set -- "$@" "$a" ;; esac; done
done
B=1
for a in "$@"; do case "$a" in *[][*?\\]*|*': '*|*"$N"*) B=0 ;; esac; done
if [ "$B" = 1 ] && [ $# -gt 0 ]; then
  S=$(dpkg -S -- "$@" 2>/dev/null); u=$N; o=$IFS; IFS=$N; set -f
  for l in $S; do
    w=; for a in "$@"; do case "$l" in *": $a") w=$a; break ;; esac; done
    case "$u" in *"$N$w$N"*) B=0 ;; esac; [ -n "$w" ] || B=0; u=$u$w$N
  done
  IFS=$o; set +f
fi
fi
asked() { case "$Q" in *"$N$1$N"*) return 0 ;; esac; return 1; }
own() { h=; o=$IFS; IFS=$N; set -f; for l in $S; do case "$l" in *": $1") h=$l; break ;; esac; done; IFS=$o; set +f; }
ver() {
  i=0; while [ "$i" -lt "$n" ]; do i=$((i + 1)); eval "[ \"\$vk_$i\" = \"\$k\" ]" && { eval "v=\$vv_$i; c=\$vc_$i"; return; }; done
  v=$("$@" -- "$k" 2>&1); c=$?; n=$((n + 1)); eval "vk_$n=\$k; vv_$n=\$v; vc_$n=\$c"
}
for t in {TOOLS}; do
p=$(command -v -- "$t" 2>/dev/null) || p=
case "$p" in /*) ;; *) printf 'tool\t%s\t-\t-\tmissing\n' "$t"; continue ;; esac
r=$(readlink -f -- "$p" 2>/dev/null) || r=$p
printf 'tool\t%s\t%s\t%s\n' "$t" "$p" "$r"
printf 'sha256\t%s\n' "$(sha256sum -- "$r" 2>/dev/null | cut -d' ' -f1)"
printf 'magic\t%s\n' "$(head -c 4 -- "$r" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
l=$(head -c 200 -- "$r" 2>/dev/null | head -n 1 | tr -d '\000\t\r')
case "$l" in '#!'*) printf 'shebang\t%s\n' "$l" ;; esac
b=$(readelf -n -- "$r" 2>/dev/null | sed -n 's/^ *Build ID: *\([0-9a-f]*\).*/\1/p' | head -n 1)
[ -n "$b" ] || b=$(file -L -- "$r" 2>/dev/null | sed -n 's/.*BuildID\[[a-z0-9]*\]=\([0-9a-f]*\).*/\1/p' | head -n 1)
printf 'build_id\t%s\n' "$b"
k=; m=-
if command -v dpkg >/dev/null 2>&1; then
  m=dpkg
  if [ "$B" = 1 ] && asked "$r" && asked "$p"; then own "$r"; k=$h; [ -n "$k" ] || { own "$p"; k=$h; }
  else k=$(dpkg -S -- "$r" 2>/dev/null | head -n 1); [ -n "$k" ] || k=$(dpkg -S -- "$p" 2>/dev/null | head -n 1); fi
  k=${k%%: *}; k=${k%%,*}
  [ -z "$k" ] || ver dpkg --verify
elif command -v rpm >/dev/null 2>&1; then
  m=rpm; k=$(rpm -qf -- "$r" 2>/dev/null | head -n 1)
  case "$k" in *' '*|'') k= ;; esac
  [ -z "$k" ] || ver rpm -V
fi
if [ -n "$k" ]; then
  printf 'package\t%s\t%s\n' "$m" "$k"
  printf '%s\n' "$v" | grep -F -e "$r" -e "$p" | sed 's/^/verify\t/'
  printf 'verify_rc\t%s\n' "$c"
else
  printf 'package\t%s\t-\n' "$m"
fi
done
printf 'ld_preload\t%s\n' "${LD_PRELOAD-}"
if [ -r /etc/ld.so.preload ]; then sed 's/^/ld_so_preload\t/' /etc/ld.so.preload; fi
exit 0"""


def identity_command(tools: Iterable[str]) -> str:
    """The listing for ``tools`` (sorted, each once) as one command line."""
    names = sorted(set(tools))
    if not names:
        raise ValueError("the tool identity listing needs at least one tool name")
    return TOOL_IDENTITY_SCRIPT.replace("{TOOLS}", join(names))


def read_identity(
    node: NodeHandle, tools: Iterable[str], once: Once | None = None
) -> tuple[tool_identity.NodeToolIdentity, CommandResult]:
    """The node's tool identities (one command); with the run's ``once``, read once per node per run.

    A tool the tenant pins (inventory ``tools:``) is the copy the run uploaded, as the node listed it
    right after the upload (``supplied_by: tenant``, its pinned SHA-256 beside): not what PATH finds.
    """
    names = tuple(sorted(set(tools)))

    def read() -> tuple[tool_identity.NodeToolIdentity, CommandResult]:
        tenant = {name: found for name in names if (found := node.tenant_tool(name)) is not None}
        own = [name for name in names if name not in tenant]
        if tenant and not own:  # every tool is the tenant's: the upload's own listing says it all
            first = next(iter(tenant.values()))
            identities = {n: t.identity for n, t in tenant.items()}
            return tool_identity.NodeToolIdentity(identities, None, first.ld_so_preload), first.listing
        result = node.run(identity_command(own), timeout=60, check=False)
        if result.exit_code != 0:
            raise MeasurementError(
                node.name, f"the tool identity listing failed (exit {result.exit_code}): "
                f"{(result.stderr or result.stdout).strip()[-300:]}",
                command="command -v; readlink -f; sha256sum; readelf -n; dpkg -S / rpm -qf",
                fix="run the listing by hand on the node; a login shell that prints text breaks it",
            )
        listed = parse_or_raise(tool_identity.parse, result)
        if tenant:
            listed = dataclasses.replace(listed, tools={**listed.tools, **{n: t.identity for n, t in tenant.items()}})
        return listed, result

    if once is None:
        return read()
    return once.get(ONCE_KIND, node.name, read)
