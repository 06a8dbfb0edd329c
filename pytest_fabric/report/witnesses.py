"""What vouches for a check's figures besides its tool, as HTML for the check's evidence block.

Reads the record's ``extra.corroborations`` (what each witness found, judge/corroboration.py),
``extra.cross_checks`` (the check's figure against another check's, judge/cross_checks.py) and
``extra.tool_identity`` (the file each tool name was on each node: path, SHA-256, build id,
package). Pure: a record dict in, escaped HTML out; node text is escaped by :func:`text`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_fabric.report.htmltext import text

__all__ = ["corroborations_html", "tool_identity_html"]

_MARK = {"agrees": "agrees", "uncorroborated": "UNCORROBORATED", "not run": "not run",
         "consistent": "consistent", "inconsistent": "INCONSISTENT", "finding": "finding"}


def corroborations_html(check: Mapping[str, Any]) -> str:
    """One line per corroboration (witness, node, what it found), a sentence when none ran; then the cross-checks."""
    extra = check.get("extra") or {}
    found = extra.get("corroborations")
    if found is None:
        return _cross_checks(extra)
    if not found:
        return "<p>Corroborations: none ran.</p>" + _cross_checks(extra)
    lines = "".join(
        f"<li>{text(c.get('witness'))} on {text(c.get('node'))}: {_MARK.get(str(c.get('status')), text(c.get('status')))}"
        f" &mdash; {text(c.get('detail'))}</li>"
        for c in found if isinstance(c, Mapping)
    )
    return f"<details><summary>Corroborations ({len(found)})</summary><ul>{lines}</ul></details>" + _cross_checks(extra)


def _cross_checks(extra: Mapping[str, Any]) -> str:
    """One line per cross-check that ran (which, the node charged, what it found); nothing when none ran."""
    found = [c for c in extra.get("cross_checks") or [] if isinstance(c, Mapping)]
    if not found:
        return ""
    lines = "".join(
        f"<li>{text(c.get('name'))}, charged to {text(c.get('node'))}: "
        f"{_MARK.get(str(c.get('status')), text(c.get('status')))} &mdash; {text(c.get('detail'))}</li>"
        for c in found
    )
    return f"<details><summary>Cross-checks ({len(found)})</summary><ul>{lines}</ul></details>"


def tool_identity_html(check: Mapping[str, Any]) -> str:
    """Each node's tools as files: path, SHA-256 (its first 16 digits), build id, package; flags as said."""
    extra = check.get("extra") or {}
    nodes = extra.get("tool_identity")
    if not isinstance(nodes, Mapping) or not nodes:
        return ""
    rows = []
    for node, tools in sorted(nodes.items()):
        if not isinstance(tools, Mapping):
            continue
        for name, ident in sorted(tools.items()):
            if not isinstance(ident, Mapping):
                continue
            package = ident.get("package") or f"no {ident.get('package_manager') or 'package'} owner"
            if ident.get("supplied_by") == "tenant":  # the inventory's tools: a copy the run uploaded
                package = ("the tenant's copy: sha256 verified on the node" if ident.get("verified_on_node")
                           else "the tenant's copy: NOT the pinned sha256")
            kind = "ELF" if ident.get("elf") else (f"script {ident.get('script')}" if ident.get("script") else "not ELF")
            rows.append(
                f"<tr><td>{text(node)}</td><td>{text(name)}</td><td>{text(ident.get('resolved') or 'missing')}</td>"
                f"<td>{text(str(ident.get('sha256') or '')[:16])}</td><td>{text(kind)}</td>"
                f"<td>{text(ident.get('build_id') or '')}</td><td>{text(package)}</td></tr>"
            )
    flags = [f"<li>{text(node)}: {text(flag)}</li>" for node, said in sorted((extra.get("tool_flags") or {}).items())
             for flag in (said or [])]
    table = ("<table><tr><th>node</th><th>tool</th><th>file</th><th>sha256</th><th>kind</th><th>build id</th>"
             "<th>package</th></tr>" + "".join(rows) + "</table>")
    return (f"<details><summary>Tools that ran ({len(rows)})</summary>{table}"
            + (f"<ul>{''.join(flags)}</ul>" if flags else "") + "</details>")
