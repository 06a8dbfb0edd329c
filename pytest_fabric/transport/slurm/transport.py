"""Reach nodes through Slurm: every node's commands run in ONE job step per node, inside one allocation.

One :class:`SlurmAllocation` per run holds the job: the one the run is inside (``--cluster
slurm``: ``SLURM_JOB_ID``/``SLURM_JOB_NODELIST``), or one it asks for itself (``salloc
--no-shell`` with the inventory's partition and account) and cancels at the end.  Each node's
:class:`SlurmTransport` runs its commands in that job:

* ``steps: agent`` (the default): the first use of a node starts its agent
  (:mod:`.agent`, :mod:`.agent_step`), ``srun --jobid=J -w NODE -N1 -n1 --overlap python3 -u -c
  SOURCE``, a step that lives as long as the run.  ``run`` and ``start`` are requests to it: the
  command runs in a process group of its own, killed at its timeout, on ``stop`` and on Ctrl-C.
  A run makes one step per node, whatever it runs: Slurm's MaxStepCount (40,000 a job by
  default) and slurmctld's RPCs grow with the nodes, not with the commands (readiness polls of
  servers included).  A wave's commands go to each node's agent at once; nothing waits.
* ``steps: per-command`` (nodes without python3): ``run`` is ``srun --jobid=J -w NODE -N1 -n1
  --overlap -l -Q --time=M sh -c CMD``; the command runs under timeout(1) on the node as over
  SSH, the step has a time limit of its own (whole minutes, Slurm's unit) as a backstop, and a
  step still running at the client's deadline is cancelled (``scancel J.S``).  A gathering (a
  wave, see :mod:`pytest_fabric.transport.gather`): the same command of K nodes is ONE step,
  ``srun -N K -n K --ntasks-per-node=1 -w NODESET -l --kill-on-bad-exit=0``; each task prints its
  exit status and node name after the command, and the ``-l`` labels split the output per node.
  ``start`` (a pair test's server): a background step with ``--overlap``, cancelled by ``stop``.

Every step is named ``pf-<run>-<n>`` (an agent's ``pf-<run>-agent-<node>``), so ``interrupt``
and ``release`` cancel exactly this run's steps, and nothing of the run is left in ``squeue``
afterwards.  Slurm's refusals become the typed errors SSH has: a node down or drained
(:class:`NodeNotAvailable`), no allocation (:class:`NoAllocation`), munge refusing us
(:class:`~pytest_fabric.transport.base.AuthenticationFailed`), a step killed at its time limit
(:class:`~pytest_fabric.transport.base.CommandTimeout`), an agent whose step ended (an error of
its node, naming the step and what srun said).  The transport knows nothing of the tools it
runs.  Its settings are in :mod:`.settings`.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shlex
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

from pytest_fabric.config.hostlist import expand, fold
from pytest_fabric.transport.base import (
    AuthenticationFailed,
    BackgroundProcess,
    CommandResult,
    CommandTimeout,
    NodeUnreachable,
    ToolMissing,
    TransportError,
)
from pytest_fabric.transport.gather import Gathering, StepOutcome
from pytest_fabric.transport.outcome import is_wrapper_timeout, judge
from pytest_fabric.transport.outputcap import KEEP_BYTES
from pytest_fabric.transport.packages import missing_tool
from pytest_fabric.transport.pipes import PipeCapture
from pytest_fabric.transport.scheduler import SchedulerJob
from pytest_fabric.transport.shellwrap import KILL_AFTER_S, with_timeout
from pytest_fabric.transport.slurm.agent_step import (
    AGENT_SOURCE,
    AgentStep,
    Request,
    end_srun,
    restated,
)
from pytest_fabric.transport.slurm.gpus import gpu_request
from pytest_fabric.transport.slurm.settings import (
    SlurmSettings,  # plain settings: the inventory makes them
)

__all__ = [
    "AgentProcess",
    "NoAllocation",
    "NodeNotAvailable",
    "SlurmAllocation",
    "SlurmStep",
    "SlurmTransport",
    "classify_srun_failure",
    "split_step_output",
]

logger = logging.getLogger(__name__)

#: what each task prints on stderr after the command: its exit status and Slurm node name
RC_MARKER = "__pf_rc="
_RC_LINE = re.compile(rf"^{RC_MARKER}(-?\d+) (\S*)$")
# ``srun -l``: the task number, space-padded to the widest one (`` 0: ``, ``15: ``).
_LABEL = re.compile(r"^\s*(\d+): ?(.*)$")
# srun's notes on tasks that exited non-zero: the marker says the same, per node.
_TASK_EXIT = re.compile(r"^srun: error: \S+: tasks? [\d,-]+: (Exited with exit code \d+|Killed|Terminated)")
_GRANTED = re.compile(r"Granted job allocation (\d+)")
# sinfo's short states a step or an allocation can use; a trailing '*' (not responding) or '!'
# (powering down) makes any of them unusable.
_USABLE_STATES = frozenset({"idle", "alloc", "mix", "comp", "idle~", "idle#", "alloc#", "mix#"})
# Job states in which the job still holds its nodes (squeue -j lists a job in any state until purged).
_HELD_STATES = frozenset({"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED"})
# Slurm's grace past a step's time limit is the controller's, not ours: the client waits this long
# beyond the node-side timeout before it cancels the step itself.
_CLIENT_GRACE_S = 15.0
# From srun's start to the agent's hello: a step launch and a Python start, on a loaded node.
_AGENT_START_S = 60.0


class NodeNotAvailable(NodeUnreachable):
    """Slurm will not run on the node: down, drained, reserved, or not in the allocation."""


class NoAllocation(TransportError):
    """There is no job to run steps in: none was given, it could not be had, or it has ended."""


def step_time_limit(timeout_s: float) -> int:
    """A step's ``--time`` in whole minutes: past the node-side timeout and its kill grace."""
    return max(1, math.ceil((timeout_s + KILL_AFTER_S + 30) / 60))


def _task_script(command: str, timeout_s: float) -> str:
    # The status line starts with a newline so it is a line of its own whatever the command's
    # stderr ended with; split_step_output takes that newline off again.
    return (
        f"{with_timeout(command, timeout_s)}; rc=$?; "
        f"printf '\\n{RC_MARKER}%s %s\\n' \"$rc\" \"$SLURMD_NODENAME\" >&2; exit $rc"
    )


@dataclass
class TaskOutput:
    """What one task of a step printed, and how it ended (``exit_code`` None: it never said)."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    node: str | None = None


@dataclass
class StepOutput:
    """A step's output split per task, and the lines srun and slurmstepd printed themselves."""

    tasks: dict[int, TaskOutput] = field(default_factory=dict)
    launcher: list[str] = field(default_factory=list)

    def by_node(self) -> dict[str, TaskOutput]:
        """The tasks that reported, by the node they ran on."""
        return {t.node: t for t in self.tasks.values() if t.node}


_CUT_NOTE = re.compile(r"\[\.\.\. [\d,]+ bytes dropped by pytest-fabric: ")


def split_step_output(stdout: str, stderr: str) -> StepOutput:
    """Split ``srun -l`` output into tasks by label; take each task's status line off its stderr."""
    out = StepOutput()
    lines: dict[tuple[int, str], list[str]] = {}
    for stream, text in (("out", stdout), ("err", stderr)):
        last: tuple[int, str] | None = None
        cut = False
        for line in text.splitlines():
            match = _LABEL.match(line)
            if match is None:
                # A flood cut (outputcap) mid-line: the note and the rest of that line are the task's.
                if last is not None and (cut or _CUT_NOTE.match(line)):
                    lines[last].append(line)
                    cut = not cut
                elif line.strip() and not _TASK_EXIT.match(line):
                    out.launcher.append(line)
                continue
            cut = False
            last = (int(match.group(1)), stream)
            lines.setdefault(last, []).append(match.group(2))
    for task in sorted({t for t, _ in lines}):
        output = TaskOutput()
        errs = lines.get((task, "err"), [])
        # The status line is the task's last word; output printed after it cannot be the command's.
        for position in range(len(errs) - 1, -1, -1):
            status = _RC_LINE.match(errs[position])
            if status:
                output.exit_code, output.node = int(status.group(1)), status.group(2) or None
                before = errs[:position]
                if before and before[-1] == "":
                    before = before[:-1]  # the newline the status line brought
                errs = before
                break
        outs = lines.get((task, "out"), [])
        output.stdout = "".join(f"{line}\n" for line in outs)
        output.stderr = "".join(f"{line}\n" for line in errs)
        out.tasks[task] = output
    return out


_NOT_AVAILABLE = re.compile(
    r"Required node not available|down, drained or reserved|Requested node configuration is not available|"
    r"not in (?:the )?(?:job's )?allocation|Node count specification invalid|invalid node name|"
    r"Only allocated \d+ nodes asked for \d+",
    re.IGNORECASE,
)
_NO_ALLOCATION = re.compile(
    r"Invalid job id|has expired|already completing or completed|Unable to confirm allocation|"
    r"Job/step already|job \d+ (?:does not exist|has been revoked)",
    re.IGNORECASE,
)
_AUTH = re.compile(r"munge|authentication|Invalid credential|Access/permission denied", re.IGNORECASE)
_TIME_LIMIT = re.compile(r"CANCELLED AT \S+ DUE TO TIME LIMIT", re.IGNORECASE)
_CONTROLLER = re.compile(r"Unable to contact slurm controller|Socket timed out|Zero Bytes were transmitted",
                         re.IGNORECASE)
_LAUNCH_FAILED = re.compile(r"Task launch for \S+ failed on node (\S+?):|"
                            r"(?:Node|node) (\S+?):? (?:failure|not responding)|"
                            r"error: (\S+?): task \d+: (?:unable|Communication)", re.IGNORECASE)


def classify_srun_failure(node: str, messages: Sequence[str], command: str, timeout_s: float,
                          job_id: str | None) -> TransportError:
    """The typed error for a node whose task never reported, from what srun and slurmstepd said."""
    text = "\n".join(messages[-12:]) or "srun printed nothing"
    job = f"job {job_id}" if job_id else "the allocation"
    if _TIME_LIMIT.search(text):
        return CommandTimeout(node, command, timeout_s)
    if _AUTH.search(text):
        return AuthenticationFailed(
            node, f"Slurm refused the step (authentication):\n{text}", command=command,
            fix="check munged runs on this host and on the node with the cluster's key (munge -n | unmunge), "
            "and that the clocks agree",
        )
    if _NO_ALLOCATION.search(text):
        return NoAllocation(
            node, f"{job} cannot run steps:\n{text}", command=command,
            fix="the allocation ended (time limit, scancel, or a failed node): run again, in a new allocation",
        )
    if _NOT_AVAILABLE.search(text):
        return NodeNotAvailable(
            node, f"Slurm will not run on {node}:\n{text}", command=command,
            fix=f"sinfo -n {node} -o '%N %t %E' says why; scontrol update nodename={node} state=resume once fixed",
        )
    if _CONTROLLER.search(text):
        return NodeUnreachable(node, f"the Slurm controller did not answer:\n{text}", command=command,
                               fix="check slurmctld is up (scontrol ping)")
    return NodeUnreachable(
        node, f"the step ended before the command did on {node}:\n{text}", command=command,
        fix=f"check slurmd on {node} (scontrol show node {node}) and its log",
    )


def _blamed_nodes(messages: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for line in messages:
        for match in _LAUNCH_FAILED.finditer(line):
            found.update(g for g in match.groups() if g)
    return found


class SlurmAllocation:
    """The job every step of the run runs in, shared by every node's transport."""

    def __init__(self, nodes: Sequence[str], settings: SlurmSettings, *,
                 env: Mapping[str, str] | None = None) -> None:
        self.nodes = list(nodes)
        self.settings = settings
        self.env = dict(env) if env is not None else None  # None: this process's environment
        self.tag = f"pf-{uuid.uuid4().hex[:8]}"
        self.job_id: str | None = settings.job_id
        #: what made or named the job, for the terminal and the record: salloc's command and answer, or
        #: the job this process runs in as squeue shows it (None: no job yet)
        self.allocation_line: str | None = None
        self.owned = False  # True when we asked for the job, so we cancel it at the end
        self._asked = False  # True once salloc ran: a job named self.tag may exist even without job_id
        self._salloc: subprocess.Popen[str] | None = None  # the salloc still waiting, for interrupt()
        self._lock = threading.Lock()
        self._ready = False
        self._error: TransportError | None = None
        self._node_errors: dict[str, TransportError] = {}
        self._seq = 0
        self._running: dict[str, subprocess.Popen[bytes]] = {}  # step name -> its srun
        self._gatherings: list[Gathering] = []
        self._agents: dict[str, AgentStep] = {}  # node -> its agent's step (steps: agent)
        self._agent_locks: dict[str, threading.Lock] = {}  # node -> held while its agent starts

    # ----------------------------------------------------------------- the job

    def _slurm(self, argv: Sequence[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=self.env,
                              stdin=subprocess.DEVNULL)

    def ensure(self) -> None:
        """Have the job: check the given one, or ask for one over the usable nodes.  Once per run."""
        with self._lock:
            if self._ready:
                return
            self._ready = True
            try:
                if self.job_id is not None:
                    self._check_job()
                else:
                    self._allocate()
            except (OSError, subprocess.SubprocessError) as exc:
                self._error = NoAllocation(self.nodes[0] if self.nodes else "slurm",
                                           f"could not run Slurm's commands: {exc}",
                                           fix="install slurm-client on this host and put srun on PATH")

    def _check_job(self) -> None:
        proc = self._slurm(["squeue", "-h", "-j", str(self.job_id), "-o", "%T %N"])
        state, _, nodelist = proc.stdout.strip().partition(" ")
        if proc.returncode != 0 and _AUTH.search(proc.stderr):
            self._error = classify_srun_failure(fold(self.nodes), proc.stderr.splitlines(),
                                                f"squeue -j {self.job_id}", 0, self.job_id)
            return
        if proc.returncode != 0 or state not in ("RUNNING", "COMPLETING"):
            self._error = NoAllocation(
                fold(self.nodes), f"job {self.job_id} is not running ({state or proc.stderr.strip() or 'unknown'})",
                command=f"squeue -j {self.job_id}",
                fix="run inside a live allocation (salloc -N K, or sbatch), or let the inventory ask for one",
            )
            return
        self.allocation_line = f"SLURM_JOB_ID={self.job_id}: {state} on {nodelist or '?'} (squeue -j {self.job_id})"
        held = set(expand(nodelist)) if nodelist else set()
        for node in self.nodes:
            if held and node not in held:
                self._node_errors[node] = NodeNotAvailable(
                    node, f"not in job {self.job_id} (it holds {nodelist})",
                    fix=f"leave {node} out of the inventory, or run in an allocation that includes it",
                )

    def _allocate(self) -> None:
        s = self.settings
        proc = self._slurm(["sinfo", "-h", "-N", "-n", fold(self.nodes), "-o", "%N|%t|%E"])
        if proc.returncode != 0:  # munge refusing us, no controller: nothing can be allocated
            self._error = classify_srun_failure(fold(self.nodes), proc.stderr.splitlines(), "sinfo -N", 0, None)
            return
        states: dict[str, tuple[str, str]] = {}
        for line in proc.stdout.splitlines():
            name, _, rest = line.partition("|")
            state, _, reason = rest.partition("|")
            states[name.strip()] = (state.strip(), reason.strip())
        usable: list[str] = []
        for node in self.nodes:
            state, reason = states.get(node, ("", ""))
            if state in _USABLE_STATES:
                usable.append(node)
            elif not state:
                self._node_errors[node] = NodeNotAvailable(
                    node, "Slurm does not know this node (sinfo lists no such node)", command="sinfo -N",
                    fix="use the node's Slurm name in the inventory (sinfo -N lists them)")
            else:
                why = f", reason: {reason}" if reason and reason != "none" else ""
                self._node_errors[node] = NodeNotAvailable(
                    node, f"Required node not available: Slurm has it {state}{why}", command="sinfo -N",
                    fix=f"scontrol update nodename={node} state=resume once it is fixed, or leave it out")
        gpu_options, short = gpu_request(s, usable, self._slurm)  # the profile's GPUs, as the site counts them
        for node, why in short.items():
            self._node_errors[node] = NodeNotAvailable(
                node, f"Requested node configuration is not available: {why}", command="sinfo -N -o %N|%G",
                fix="give the node its GPUs in Slurm (gres.conf, Gres= in slurm.conf), fix gpu_count in the profile, "
                    "or leave the node out")
        usable = [node for node in usable if node not in short]
        if short and not usable:
            self._error = NoAllocation(fold(self.nodes), f"no node has the GPUs the profile expects: {next(iter(short.values()))}",
                                       command="sinfo -N -o %N|%G", fix="fix gpu_count in the profile, or the nodes' gres in Slurm")
            return
        if not usable:
            self._error = NoAllocation(fold(self.nodes), "no node of the inventory is usable in Slurm",
                                       command="sinfo -N", fix="see each node's state in sinfo -N")
            return
        argv = ["salloc", "--no-shell", "--no-kill", "--exclusive", f"--job-name={self.tag}",
                "-N", str(len(usable)), "-w", fold(usable), f"--time={s.time_limit_min or 120}",
                f"--immediate={s.wait_s}"]
        if s.partition:
            argv.append(f"--partition={s.partition}")
        if s.account:
            argv.append(f"--account={s.account}")
        argv.extend(gpu_options)
        argv.extend(s.salloc_options)
        proc = self._request(argv, timeout=s.wait_s + 30)
        granted = _GRANTED.search(proc.stderr + proc.stdout)
        if proc.returncode != 0 or granted is None:
            self._error = NoAllocation(
                fold(usable), f"no allocation was granted:\n{(proc.stderr or proc.stdout).strip()}",
                command=shlex.join(argv),
                fix="check the partition and account (sinfo, sacctmgr show assoc user=$USER), or raise slurm.wait",
            )
            return
        self.job_id, self.owned = granted.group(1), True
        self.allocation_line = f"{shlex.join(argv)}: {granted.group(0)}"

    def _request(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        """Run salloc where :meth:`interrupt` reaches it without the lock ``ensure`` holds while it waits.

        A run stopped while the request waits (Ctrl-C, SIGTERM: the request may wait minutes for
        nodes) ends salloc, which withdraws its request; :meth:`release` cancels by name what is left.
        """
        self._asked = True
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, env=self.env)
        self._salloc = proc
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except BaseException:  # its timeout, or the run stopped while this thread waited
            proc.terminate()
            try:
                proc.communicate(timeout=KILL_AFTER_S)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
        finally:
            self._salloc = None
        return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)

    def node_error(self, node: str) -> TransportError | None:
        """Why ``node`` cannot run steps in this run, if it cannot."""
        self.ensure()
        if self._error is not None:
            error = type(self._error).__new__(type(self._error))
            error.__dict__.update(self._error.__dict__)
            error.node = node
            Exception.__init__(error, error._render())
            return error
        return self._node_errors.get(node)

    # ----------------------------------------------------------------- steps

    def _step_argv(self, nodes: Sequence[str], name: str, script: str, timeout_s: float) -> list[str]:
        count = str(len(nodes))
        return [
            "srun", f"--jobid={self.job_id}", f"--job-name={name}", "--overlap", "-N", count, "-n", count,
            "--ntasks-per-node=1", "-w", fold(nodes), "--label", "--quiet", "--kill-on-bad-exit=0",
            "--wait=0", "--input=none", f"--time={step_time_limit(timeout_s)}", f"--chdir={self.settings.chdir}",
            *self.settings.srun_options, "sh", "-c", script,
        ]

    def _name(self) -> str:
        with self._lock:
            self._seq += 1
            return f"{self.tag}-{self._seq}"

    def _launch(self, nodes: Sequence[str], command: str, timeout_s: float) -> tuple[str, subprocess.Popen[bytes]]:
        name = self._name()
        proc = subprocess.Popen(
            self._step_argv(nodes, name, _task_script(command, timeout_s), timeout_s),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env,
            start_new_session=True,  # a Ctrl-C in the terminal is ours to handle, not srun's
        )
        with self._lock:
            self._running[name] = proc
        return name, proc

    def _forget(self, name: str) -> None:
        with self._lock:
            self._running.pop(name, None)

    def _leavers(self, nodes: Sequence[str]) -> list[str]:
        """Nodes of ``nodes`` the job no longer holds (Slurm took a failed node out: --no-kill); remembered."""
        proc = self._slurm(["squeue", "-h", "-j", str(self.job_id), "-o", "%N"], timeout=15)
        if proc.returncode != 0 or not proc.stdout.strip():
            return []
        held = set(expand(proc.stdout.strip()))
        gone = [n for n in nodes if n not in held]
        if gone:
            states = self._slurm(["sinfo", "-h", "-N", "-n", fold(gone), "-o", "%N|%t|%E"], timeout=15).stdout
            said = {line.split("|")[0]: line.split("|", 1)[1:] for line in states.splitlines() if "|" in line}
            with self._lock:
                for node in gone:
                    state = said.get(node, ["unknown"])[0].replace("|", ", reason: ")
                    self._node_errors[node] = NodeNotAvailable(
                        node, f"Required node not available: job {self.job_id} no longer holds it "
                        f"(Slurm has it {state})", command=f"squeue -j {self.job_id}",
                        fix=f"scontrol show node {node}; once fixed: scontrol update nodename={node} state=resume",
                    )
        return gone

    def run_many(self, nodes: list[str], command: str, timeout: float, check: bool) -> dict[str, StepOutcome]:
        """Run ``command`` on every node of ``nodes`` as ONE step; each node's result or error.

        A step Slurm refuses as a whole because a node left the job (it went down) is run again
        over the nodes still held, so only the node that left errors.  With agents (``steps:
        agent``) no step is made: each node's agent runs the command, all at once.
        """
        if self.uses_agents:
            return self._run_on_agents(nodes, command, timeout, check)
        outcomes = self._run_step(nodes, command, timeout, check)
        failed = [n for n, o in outcomes.items() if isinstance(o, (NodeNotAvailable, NodeUnreachable))
                  and not isinstance(o, CommandTimeout)]
        if len(failed) > 1 and self.job_id is not None:
            gone = self._leavers(failed)
            if gone and len(gone) < len(failed):
                outcomes.update(self._run_step([n for n in failed if n not in gone], command, timeout, check))
                for node in gone:
                    outcomes[node] = self._node_errors[node]
        return outcomes

    def _run_step(self, nodes: list[str], command: str, timeout: float, check: bool) -> dict[str, StepOutcome]:
        outcomes: dict[str, StepOutcome] = {}
        usable: list[str] = []
        for node in dict.fromkeys(nodes):
            error = self.node_error(node)
            if error is not None:
                outcomes[node] = error
            else:
                usable.append(node)
        if not usable:
            return outcomes
        started = time.monotonic()
        name, proc = self._launch(usable, command, timeout)
        # Every node's output on srun's two pipes: each kept up to KEEP_BYTES a node (head and tail beyond).
        capture = PipeCapture(proc, KEEP_BYTES * len(usable))
        timed_out = False
        try:
            proc.wait(timeout=timeout + KILL_AFTER_S + _CLIENT_GRACE_S)
            capture.join(None)
        except subprocess.TimeoutExpired:
            timed_out = True
            self._cancel(name, proc)
            proc.wait()
            capture.join(None)
        except BaseException:
            self._cancel(name, proc)  # Ctrl-C while waiting: leave no step behind
            raise
        finally:
            self._forget(name)
        elapsed = time.monotonic() - started
        split = split_step_output(capture.stdout.text(), capture.stderr.text())
        reported = split.by_node()
        blamed = _blamed_nodes(split.launcher)
        for node in usable:
            task = reported.get(node)
            if task is None or task.exit_code is None:
                if timed_out:
                    outcomes[node] = CommandTimeout(node, command, timeout, task.stdout if task else "")
                else:
                    messages = [m for m in split.launcher if node in m or not blamed] or split.launcher
                    if not messages:  # say at least how srun ended
                        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
                        messages = [f"srun ended ({how}) after {elapsed:.1f} s without a word and without the task's status"]
                    outcomes[node] = classify_srun_failure(node, messages, command, timeout, self.job_id)
                continue
            result = CommandResult(node, command, task.exit_code, task.stdout, task.stderr, elapsed)
            if is_wrapper_timeout(task.exit_code, elapsed, timeout):
                outcomes[node] = CommandTimeout(node, command, timeout, task.stdout)
                continue
            try:
                outcomes[node] = judge(result, check=check)
            except TransportError as exc:
                outcomes[node] = exc
        return outcomes

    def start(self, node: str, command: str, timeout: float) -> BackgroundProcess:
        """Start ``command`` on ``node``: a request to its agent, or a background step that overlaps the others."""
        if self.uses_agents:
            agent = self.agent(node)
            return AgentProcess(agent, agent.submit(command, timeout))
        error = self.node_error(node)
        if error is not None:
            raise error
        name, proc = self._launch([node], command, timeout)
        return SlurmStep(self, node, command, name, proc, timeout)

    def _step_ids(self, names: set[str] | None = None) -> list[str]:
        """The ids (``J.S``) of this run's steps squeue lists: all of them, or those named."""
        if self.job_id is None:
            return []
        proc = self._slurm(["squeue", "-h", "-s", "-j", str(self.job_id), "-o", "%i %j"], timeout=15)
        ids: list[str] = []
        for line in proc.stdout.splitlines():
            step, _, step_name = line.strip().partition(" ")
            if step_name.startswith(f"{self.tag}-") and (names is None or step_name in names):
                ids.append(step)
        return ids

    def _cancel(self, name: str, proc: subprocess.Popen[bytes] | None) -> None:
        """Cancel the step ``name`` in Slurm, then end its srun."""
        try:
            ids = self._step_ids({name})
            if ids:
                self._slurm(["scancel", *ids], timeout=15)
        except (OSError, subprocess.SubprocessError):
            logger.debug("cancelling step %s failed", name, exc_info=True)
        if proc is not None:
            end_srun(proc)

    def interrupt(self) -> None:
        """Cancel every step of this run still running (Ctrl-C), at once.  Never raises.

        An allocation still being asked for is withdrawn: its salloc is ended.
        """
        salloc = self._salloc  # not under the lock: ensure() holds it while salloc waits
        if salloc is not None and salloc.poll() is None:
            try:
                salloc.terminate()
            except ProcessLookupError:
                pass
        with self._lock:
            agents = list(self._agents.values())
        for agent in agents:
            agent.kill_all()
        with self._lock:
            running = dict(self._running)
        if not running:
            return
        try:
            ids = self._step_ids(set(running))
            if ids:
                self._slurm(["scancel", *ids], timeout=15)
        except Exception:  # noqa: BLE001 - best effort while a run unwinds
            logger.debug("cancelling this run's steps failed", exc_info=True)
        for proc in running.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass

    def release(self) -> None:
        """Cancel what is left of the run: the job if we asked for it, else this run's steps.  Idempotent."""
        self.interrupt()
        self._close_agents()
        if self.job_id is None:
            if self._asked:  # salloc ended before it told us the job: nothing of ours stays queued or held
                try:
                    self._slurm(["scancel", f"--name={self.tag}"], timeout=15)
                except (OSError, subprocess.SubprocessError):
                    logger.debug("cancelling job %s by name failed", self.tag, exc_info=True)
            return
        try:
            if self.owned:
                self._slurm(["scancel", str(self.job_id)], timeout=15)
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:  # gone from squeue before the run reports it is done
                    left = self._slurm(["squeue", "-h", "-j", str(self.job_id), "-o", "%T"], timeout=15).stdout
                    logger.debug("job %s: %s", self.job_id, left.strip())
                    if left.strip() not in _HELD_STATES:
                        break
                    time.sleep(0.2)
                self.owned = False
            else:
                ids = self._step_ids()
                if ids:
                    self._slurm(["scancel", *ids], timeout=15)
        except (OSError, subprocess.SubprocessError):
            logger.debug("releasing job %s failed", self.job_id, exc_info=True)

    # ----------------------------------------------------------------- agents

    @property
    def uses_agents(self) -> bool:
        """One long-lived step per node runs every command (``steps: agent``)."""
        return self.settings.steps == "agent"

    def _agent_argv(self, node: str, name: str) -> list[str]:
        return [
            "srun", f"--jobid={self.job_id}", f"--job-name={name}", "--overlap", "-N", "1", "-n", "1", "-w", node,
            "--quiet", "--unbuffered", "--kill-on-bad-exit=0", f"--chdir={self.settings.chdir}",
            *self.settings.srun_options, "python3", "-u", "-c", AGENT_SOURCE,
        ]

    def agent(self, node: str) -> AgentStep:
        """``node``'s agent, its step started on first use; raise the node's error when it has none."""
        error = self.node_error(node)
        if error is not None:
            raise error
        with self._lock:
            lock = self._agent_locks.setdefault(node, threading.Lock())
        with lock:  # one start per node; the others' starts go on in their own threads
            agent = self._agents.get(node)
            if agent is None:
                name = f"{self.tag}-agent-{node}"

                def died(messages: Sequence[str], code: int | None) -> TransportError:
                    return self._agent_died(node, name, messages, code)

                agent = AgentStep(node, name, self._agent_argv(node, name), self.env, died)
                with self._lock:
                    self._agents[node] = agent  # before it starts: release() reaches a step still starting
                agent.open(_AGENT_START_S)  # raises the node's error
                return agent
        if agent.error is not None:
            raise agent.error.again()
        return agent

    def _agent_died(self, node: str, name: str, messages: Sequence[str], code: int | None) -> TransportError:
        """The error of ``node`` whose agent step ``name`` ended (or never started), from what srun said."""
        command = f"srun --jobid={self.job_id} -w {node} --overlap python3 -u -c <pytest-fabric agent> (step {name})"
        if self.job_id is not None and self._leavers([node]):
            error = restated(self._node_errors[node], command=command)
            said = "\n".join(messages[-6:]) or "nothing"
            error.detail = f"this node's agent (step {name}) ended: {error.detail}; srun said:\n{said}"
            Exception.__init__(error, error._render())
            return error
        text = "\n".join(messages)
        if re.search(r"execve\(\): python3|python3: (?:command )?not found", text):
            missing = ToolMissing(node, "python3", command=command, package="python3")
            missing.fix = f"{missing.fix}, or set slurm: {{steps: per-command}} in the inventory"
            Exception.__init__(missing, missing._render())
            return missing
        if not messages:
            how = "still running" if code is None else f"killed by signal {-code}" if code < 0 else f"exit {code}"
            messages = [f"srun ended ({how}) without a word"]
        error = classify_srun_failure(node, messages, command, 0, self.job_id)
        error.detail = f"this node's agent (step {name}) ended: {error.detail}"
        Exception.__init__(error, error._render())
        return error

    def _agents_for(self, nodes: Sequence[str]) -> dict[str, AgentStep | TransportError]:
        """Each node's agent, those not yet started started at once (a step launch each, in parallel)."""
        with self._lock:
            fresh = [n for n in nodes if n not in self._agents]

        def one(node: str) -> AgentStep | TransportError:
            try:
                return self.agent(node)
            except TransportError as exc:
                return exc

        if len(fresh) > 1:
            with ThreadPoolExecutor(max_workers=min(len(fresh), 32), thread_name_prefix="pf-agent-start") as pool:
                started = dict(zip(fresh, pool.map(one, fresh)))
        else:
            started = {}
        return {n: started[n] if n in started else one(n) for n in nodes}

    def _run_on_agents(self, nodes: Sequence[str], command: str, timeout: float,
                       check: bool) -> dict[str, StepOutcome]:
        outcomes: dict[str, StepOutcome] = {}
        requests: list[tuple[AgentStep, Request]] = []
        for node, agent in self._agents_for(list(dict.fromkeys(nodes))).items():
            if isinstance(agent, TransportError):
                outcomes[node] = agent
            else:
                requests.append((agent, agent.submit(command, timeout)))
        # The agent kills the command at its timeout and answers; past this it is not answering.
        deadline = time.monotonic() + timeout + KILL_AFTER_S + _CLIENT_GRACE_S
        try:
            for agent, request in requests:
                outcomes[agent.node] = _agent_outcome(agent, request, deadline, check)
        except BaseException:  # Ctrl-C while waiting: none of these may go on running on its node
            for agent, request in requests:
                agent.kill(request)
            raise
        return outcomes

    def _close_agents(self) -> None:
        """End every agent: each ends its commands and exits; a step that does not is cancelled."""
        with self._lock:
            agents, self._agents = list(self._agents.values()), {}
        for agent in agents:
            agent.ask_to_close()
        deadline = time.monotonic() + KILL_AFTER_S + 5
        for agent in agents:
            if not agent.wait_closed(deadline - time.monotonic()):
                self._cancel(agent.name, agent.process)

    # ----------------------------------------------------------------- waves

    @contextmanager
    def gathering(self, nodes: Iterable[str]) -> Iterator[Gathering]:
        """Within the block, identical commands of ``nodes`` run as one step per round.

        With agents there is nothing to share: every node's command goes to its agent as it
        comes, and a gathering over no nodes makes nobody wait.
        """
        if self.uses_agents:
            yield Gathering((), self.run_many)
            return
        group = Gathering(nodes, self.run_many, window_s=self.settings.gather_window_s)
        with self._lock:
            self._gatherings.append(group)
        try:
            yield group
        finally:
            with self._lock:
                self._gatherings.remove(group)

    def gathering_of(self, node: str) -> Gathering | None:
        with self._lock:
            for group in reversed(self._gatherings):
                if node in group:
                    return group
        return None


class SlurmTransport:
    """One node reached through Slurm steps; see :class:`~.base.Transport` for the contract."""

    def __init__(self, node: str, allocation: SlurmAllocation) -> None:
        self.node = node
        self.allocation = allocation
        self.launcher: object = allocation  # nodes of one allocation share wave steps
        self._lock = threading.Lock()
        self._background: list[BackgroundProcess] = []

    def __repr__(self) -> str:
        return f"SlurmTransport({self.node!r}, job={self.allocation.job_id})"

    def scheduler_job(self) -> SchedulerJob | None:
        """The job this node's commands run in, for launches across nodes (see :mod:`..scheduler`)."""
        self.allocation.ensure()
        job = self.allocation.job_id
        return SchedulerJob("slurm", job, self.allocation.settings.mpi) if job is not None else None

    def connect(self) -> None:
        """Have the allocation; raise the node's typed error when Slurm will not run on it."""
        error = self.allocation.node_error(self.node)
        if error is not None:
            raise error
        if self.allocation.uses_agents:
            self.allocation.agent(self.node)

    def run(self, command: str, *, timeout: float, check: bool = True) -> CommandResult:
        """Run ``command`` as a step on this node (or as part of its wave's step)."""
        group = self.allocation.gathering_of(self.node)
        if group is not None:
            outcome = group.run(self.node, command, timeout, check)
        else:
            outcome = self.allocation.run_many([self.node], command, timeout, check)[self.node]
        if isinstance(outcome, TransportError):
            raise outcome
        return outcome

    def start(self, command: str, *, timeout: float) -> BackgroundProcess:
        """Start ``command`` in the background (its agent's, or a step); it ends at ``timeout`` at the latest."""
        step = self.allocation.start(self.node, command, timeout)
        with self._lock:
            self._background.append(step)
        return step

    def gathering(self, nodes: Iterable[str]) -> AbstractContextManager[Gathering]:
        """See :class:`.gather.Coalescing`."""
        return self.allocation.gathering(nodes)

    def interrupt(self) -> None:
        """Kill this run's running commands, on every node (a wave's step spans nodes)."""
        self.allocation.interrupt()

    def close(self) -> None:
        """Stop this node's background steps.  The allocation is released by its owner."""
        with self._lock:
            steps, self._background = self._background, []
        for step in steps:
            try:
                step.stop()
            except Exception:  # noqa: BLE001 - closing must go on
                logger.debug("stopping %s on %s failed", step.command, self.node, exc_info=True)


class SlurmStep:
    """A background step (a server); see :class:`~.base.BackgroundProcess`."""

    def __init__(self, allocation: SlurmAllocation, node: str, command: str, name: str,
                 proc: subprocess.Popen[bytes], timeout_s: float) -> None:
        self.node = node
        self.command = command
        self.name = name
        self.timeout_s = timeout_s
        self._allocation = allocation
        self._proc = proc
        self._started = time.monotonic()
        self._result: CommandResult | None = None
        self._output: tuple[str, str] | None = None
        self._reader = threading.Thread(target=self._read, name=f"pytest-fabric step {node}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        capture = PipeCapture(self._proc)  # a server's output, kept up to KEEP_BYTES a stream
        capture.join(None)
        self._proc.wait()
        self._output = (capture.stdout.text(), capture.stderr.text())
        self._allocation._forget(self.name)

    def is_running(self) -> bool:
        return self._proc.poll() is None

    def _finish(self) -> CommandResult:
        self._reader.join(5)
        stdout, stderr = self._output or ("", "")
        split = split_step_output(stdout, stderr)
        task = split.by_node().get(self.node) or next(iter(split.tasks.values()), None)
        code = task.exit_code if task is not None and task.exit_code is not None else -1
        err = task.stderr if task else ""
        if code == -1 and split.launcher:
            err += "".join(f"{line}\n" for line in split.launcher)
        return CommandResult(self.node, self.command, code, task.stdout if task else "", err,
                             time.monotonic() - self._started)

    def wait(self, timeout: float) -> CommandResult:
        """Wait for the step to end by itself; on timeout cancel it and raise CommandTimeout."""
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            partial = self.stop()
            raise CommandTimeout(self.node, self.command, timeout, partial.stdout) from None
        result = self._finish()
        if result.exit_code != 0 and missing_tool(result.exit_code, result.stderr, result.command):
            judge(result, check=True)  # raises ToolMissing, as the other transports do
        return result

    def stop(self) -> CommandResult:
        """Cancel the step (scancel) and return what it printed.  Idempotent."""
        if self._proc.poll() is None:
            self._allocation._cancel(self.name, self._proc)
        return self._finish()


def _agent_outcome(agent: AgentStep, request: Request, deadline: float, check: bool) -> StepOutcome:
    """How ``request`` ended: its result, or the typed error (the agent's timeout is a CommandTimeout)."""
    node, command = agent.node, request.command
    if not agent.finish(request, max(0.0, deadline - time.monotonic())):
        agent.kill(request)  # the agent did not answer at the command's timeout: kill it and stop waiting
        agent.finish(request, agent.grace_s + 2)
        if not request.done.is_set():
            return CommandTimeout(node, command, request.timeout)
    if request.error is not None:
        return request.error
    answer = request.answer or {}
    stdout, stderr = str(answer.get("stdout", "")), str(answer.get("stderr", ""))
    if answer.get("timed_out"):
        return CommandTimeout(node, command, request.timeout, stdout)
    result = CommandResult(node, command, int(answer.get("rc", -1)), stdout, stderr, request.elapsed_s)
    try:
        return judge(result, check=check)
    except TransportError as exc:
        return exc


class AgentProcess:
    """A command in the background on a node's agent (a server); see :class:`~.base.BackgroundProcess`."""

    def __init__(self, agent: AgentStep, request: Request) -> None:
        self.node = agent.node
        self.command = request.command
        self.timeout_s = request.timeout
        self._agent = agent
        self._request = request

    def is_running(self) -> bool:
        return not self._request.done.is_set()

    def _result(self) -> CommandResult:
        request = self._request
        if request.answer is None:  # the agent is gone, or never answered
            why = str(request.error) if request.error is not None else "the node's agent did not answer"
            return CommandResult(self.node, self.command, -1, "", f"{why}\n", request.elapsed_s)
        answer = request.answer
        return CommandResult(self.node, self.command, int(answer.get("rc", -1)), str(answer.get("stdout", "")),
                             str(answer.get("stderr", "")), request.elapsed_s)

    def _checked(self, result: CommandResult) -> CommandResult:
        # A server that was never there is an error, not an output (as over SSH).
        if result.exit_code != 0 and missing_tool(result.exit_code, result.stderr, result.command):
            judge(result, check=True)
        return result

    def wait(self, timeout: float) -> CommandResult:
        """Wait for the command to end by itself; on timeout kill it and raise CommandTimeout."""
        if not self._agent.finish(self._request, timeout):
            partial = self.stop()
            raise CommandTimeout(self.node, self.command, timeout, partial.stdout)
        if self._request.error is not None:
            raise restated(self._request.error)
        result = self._result()
        if self._request.answer is not None and self._request.answer.get("timed_out"):
            raise CommandTimeout(self.node, self.command, self.timeout_s, result.stdout)
        return self._checked(result)

    def stop(self) -> CommandResult:
        """TERM the command's process group on the node, KILL it after the grace; what it printed.  Idempotent."""
        if not self._request.done.is_set():
            self._agent.kill(self._request)
            self._agent.finish(self._request, self._agent.grace_s + 5)
        return self._checked(self._result())
