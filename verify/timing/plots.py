"""Pictures for `syncproof bench --out DIR` (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display on build machines
    import matplotlib.pyplot as plt

    return plt


def bar_chart(rows: list[dict], path: Path, profile: str) -> None:
    """Speed-up over `barrier` per kernel, one bar per strategy."""
    plt = _pyplot()
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    strategies = [s for s in dict.fromkeys(r["strategy"] for r in rows) if s != "barrier"]
    width = 0.8 / max(1, len(strategies))
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(kernels) + 2), 4))
    speedup = {(r["kernel"], r["strategy"]): r.get("vs_barrier") for r in rows}
    for n, strategy in enumerate(strategies):
        # kernels need not share strategies (.mlir kernels add snax-barrier, .sync ones
        # the peers): a strategy a kernel was not timed under has no bar there
        values = [speedup.get((k, strategy)) or float("nan") for k in kernels]
        ax.bar([i + n * width for i in range(len(kernels))], values, width, label=strategy)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xticks([i + width * (len(strategies) - 1) / 2 for i in range(len(kernels))])
    ax.set_xticklabels(kernels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("speed-up over barrier (x)")
    ax.set_title(f"syncproof bench ({profile} profile)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


_COLORS = {"op": "tab:blue", "stall": "tab:red", "barrier": "tab:orange", "overhead": "tab:gray"}


def timeline_png(runs: list, profile, path: Path, title: str) -> None:
    """One panel per strategy: engines as rows, ops, stalls, barriers and overheads as bars."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(runs), 1, figsize=(10, 1.2 + 0.5 * len(runs[0][1].engines) * len(runs)),
                             sharex=True, squeeze=False)
    for ax, (strategy, program, timeline) in zip(axes[:, 0], runs):
        for kind, color in _COLORS.items():
            for n in range(len(program.engines)):
                bars = [(s.start, s.end - s.start) for s in timeline.slices
                        if s.engine == n and s.kind == kind and s.end > s.start]
                if bars:
                    ax.broken_barh(bars, (n - 0.4, 0.8), facecolors=color)
        ax.set_yticks(range(len(program.engines)))
        ax.set_yticklabels(program.engines)
        ax.set_title(f"{title}: {strategy}, {timeline.cycles:.0f} cycles", fontsize=9)
    axes[-1, 0].set_xlabel(f"cycles ({profile.name} profile)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in _COLORS.values()]
    axes[0, 0].legend(handles, list(_COLORS), loc="upper right", fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
