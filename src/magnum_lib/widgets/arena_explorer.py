"""Policy-arena explorer (notebook 10): JCT CDFs of the built-in policies on a Philly slice.

UI only: every number comes from :func:`magnum_lib.replay.replay` (the compiled loop).

    explorer = arena_explorer()
    explorer.widget                       # display it
    explorer.controls["gpus"].value = 24  # in a test
    explorer.scenario["fifo-skip"]        # the latest ReplayResult of that policy
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np

from magnum_lib.widgets import style
from magnum_lib.widgets._base import BlittedExplorer, new_figure, pure_python, size_note, slider

POLICIES = ("fifo-strict", "fifo-skip", "srtf", "las")
COLORS = {p: style.color(p) for p in POLICIES}   # the suite's colour of each policy
MAX_JOBS = 1400
PURE_PYTHON_MAX_JOBS = 600
"""The jobs slider ends here on the pure-Python backend: its readable replay loop costs
about 0.1 ms of CPU per job and policy there, and each change must answer in 0.3 s."""


def pure_python_note() -> str:
    """What the explorer says on screen about its size on the pure-Python backend ('' compiled)."""
    return size_note("the jobs slider ends at", PURE_PYTHON_MAX_JOBS, MAX_JOBS) if pure_python() else ""


class ArenaExplorer(BlittedExplorer):
    """Sliders: cluster GPUs (4 per node) and jobs in the slice; the JCT CDF of each policy."""

    css_class = "magnum-arena-explorer"

    def __init__(self, vc: str = "103959", gpus: int = 20, jobs: int = 400, start: int = 0):
        from magnum_lib.replay.traces import philly_jobs

        self.all_jobs = philly_jobs(vc, min_duration_s=60, gpu_counts=[1, 2, 4, 8])
        self.vc, self.start = vc, int(start)
        top = max(PURE_PYTHON_MAX_JOBS, int(jobs)) if pure_python() else MAX_JOBS
        controls = {
            "gpus": slider(widgets.IntSlider, "cluster GPUs", value=gpus, min=8, max=64, step=4),
            "jobs": slider(widgets.IntSlider, "jobs in the slice", value=jobs, min=100,
                           max=min(top, len(self.all_jobs) - self.start), step=100),
        }
        super().__init__(controls, new_figure())
        self._ax = self.figure.add_subplot()
        # Fixed axes (JCTs of the Philly jobs kept lie between 60 s and a few months), so
        # the blitted background is drawn once and a change redraws only the curves. Hours,
        # the readout table's unit.
        self._lines = {p: self._ax.plot([], [], color=COLORS[p], lw=2, label=p, animated=True)[0]
                       for p in POLICIES}
        self._title = self._ax.text(0.5, 1.02, "", transform=self._ax.transAxes, ha="center",
                                    fontsize=style.FONT_PT, animated=True)
        self._axes = [self._ax]
        self._animated = [*self._lines.values(), self._title]
        style.log_axis(self._ax, [0.01, 0.1, 1, 10, 100, 1e3, 1e4], axis="x")
        self._ax.set_xlim(30 / 3600, 1e8 / 3600)
        self._ax.set_ylim(0, 1.02)
        self._ax.set_xlabel("job completion time (h, log)")
        self._ax.set_ylabel("fraction of jobs")
        # Lower right stays empty: every curve reaches 1 before the longest JCTs (months).
        style.legend(self._ax, loc="lower right")
        self.update()

    def evaluate(self) -> dict:
        from magnum_lib.replay import ReplayCluster, replay

        jobs = self.all_jobs.subset(slice(self.start, self.start + self.controls["jobs"].value)).shifted()
        cluster = ReplayCluster.uniform(self.controls["gpus"].value // 4, 4)
        return {p: replay(jobs, cluster, p, progress=False) for p in POLICIES}

    def draw(self, sc: dict) -> None:
        for p, r in sc.items():
            x, y = r.jct_cdf()   # seconds
            self._lines[p].set_data(np.asarray(x) / 3600.0, y)
        r = next(iter(sc.values()))
        self._title.set_text(f"{len(r.jct_s)} Philly jobs (VC {self.vc}) on {r.cluster.total_gpus} GPUs")

    def readout_html(self, sc: dict) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(p)}</td><td>{s['avg_jct_s'] / 3600:.1f}</td>"
            f"<td>{s['p99_jct_s'] / 3600:.1f}</td><td>{s['ftf_rho_max']:.0f}</td>"
            f"<td>{s['preemptions']}</td></tr>"
            for p, s in ((p, r.summary()) for p, r in sc.items()))
        wall = sum(r.wall_s for r in sc.values()) * 1e3
        note = f"<br><small>{html.escape(pure_python_note())}</small>" if pure_python_note() else ""
        return ("<div class='magnum-readout'><table cellpadding=3><tr><th>policy</th>"
                "<th>avg JCT (h)</th><th>p99 JCT (h)</th><th>worst rho</th><th>preemptions</th></tr>"
                f"{rows}</table>4 replays in {wall:.1f} ms{note}</div>")


def arena_explorer(**kwargs) -> ArenaExplorer:
    """Build the arena explorer (see :class:`ArenaExplorer`)."""
    return ArenaExplorer(**kwargs)


# (control, value) changes that benchmarks/bench_widgets.py replays: each moves the replays.
BENCH_STEPS = [("gpus", 24), ("jobs", 600), ("gpus", 12), ("jobs", 300), ("gpus", 32), ("jobs", 400),
               ("gpus", 20)]
