/** The page's stylesheet, served at `<path>/assets/dashboard.css`; system fonts, no images. */
export const PAGE_STYLES = String.raw`
:root {
  --fg: #1d1d1f; --muted: #6e6e73; --line: #e3e3e8; --bg: #fff; --panel: #f6f6f8; --accent: #0b62c4;
  --ok: #1b7f3b; --bad: #b00020; --warn: #a15c00; --wait: #6b4fbb; --sched: #007c89; --grey: #8a8a8e;
  color-scheme: light;
}
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 0; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: center; gap: 1.5rem; padding: .6rem 1.4rem; border-bottom: 1px solid var(--line); background: var(--panel); position: sticky; top: 0; z-index: 2; }
header h1 { font-size: 1.1rem; margin: 0; }
nav { display: flex; gap: .2rem; }
nav a { padding: .3rem .7rem; border-radius: 6px; color: var(--fg); text-decoration: none; }
nav a:hover { background: #e8e8ed; }
nav a.current { background: var(--accent); color: #fff; }
.status { margin-left: auto; color: var(--muted); font-size: .85rem; }
.status.error { color: var(--bad); }
#toolbar:empty { display: none; }
#toolbar { padding: .6rem 1.4rem 0; }
main { padding: .6rem 1.4rem 2rem; }
h2 { font-size: 1.05rem; margin: 1.4rem 0 .5rem; }
h3 { font-size: .95rem; margin: 1.2rem 0 .4rem; }
h4 { font-size: .85rem; margin: .8rem 0 .3rem; color: var(--muted); }
a { color: var(--accent); }
.muted { color: var(--muted); } .small { font-size: .8rem; }
.mono, code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85em; }
table.grid { border-collapse: collapse; width: 100%; margin: .3rem 0; }
table.grid th, table.grid td { padding: .3rem .55rem; text-align: left; border-bottom: 1px solid var(--line); vertical-align: top; }
table.grid th { font-weight: 600; color: var(--muted); font-size: .8rem; white-space: nowrap; }
table.grid td.n, table.grid th.n { text-align: right; font-variant-numeric: tabular-nums; }
table.grid td.wide { max-width: 32rem; overflow-wrap: anywhere; }
table.grid td.empty { color: var(--muted); text-align: center; padding: 1rem; }
table.grid tr.ticked { background: #eef4fc; }
table.grid tr.dead td { color: var(--grey); }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 9px; font-size: .78rem; line-height: 1.35rem; background: #eee; color: var(--fg); white-space: nowrap; }
.badge.st-succeeded { background: #e3f4e8; color: var(--ok); }
.badge.st-failed { background: #fde8eb; color: var(--bad); }
.badge.st-active, .badge.st-executing { background: #e4eefb; color: var(--accent); }
.badge.st-queued { background: #fff3e0; color: var(--warn); }
.badge.st-scheduled { background: #e0f4f5; color: var(--sched); }
.badge.st-waiting { background: #efeafa; color: var(--wait); }
.badge.st-cancelled, .badge.st-skipped, .badge.st-interrupted { background: #eee; color: var(--grey); }
.badge.paused { background: #fff3e0; color: var(--warn); margin-left: .4rem; }
td.st-failed, span.st-failed, .err { color: var(--bad); }
td.st-succeeded, span.st-succeeded { color: var(--ok); }
.cards { display: grid; grid-template-columns: repeat(8, minmax(0, 1fr)); gap: .5rem; margin-top: .6rem; }
.card { display: flex; flex-direction: column; padding: .6rem .8rem; border: 1px solid var(--line); border-radius: 8px; text-decoration: none; color: var(--fg); border-top: 3px solid var(--grey); }
.card:hover { background: var(--panel); }
.card-n { font-size: 1.4rem; font-weight: 600; font-variant-numeric: tabular-nums; }
.card-label { color: var(--muted); font-size: .8rem; }
.card.st-succeeded { border-top-color: var(--ok); } .card.st-failed { border-top-color: var(--bad); }
.card.st-active { border-top-color: var(--accent); } .card.st-queued { border-top-color: var(--warn); }
.card.st-scheduled { border-top-color: var(--sched); } .card.st-waiting { border-top-color: var(--wait); }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; }
.chart { margin: 0; padding: .5rem .7rem; border: 1px solid var(--line); border-radius: 8px; }
.chart figcaption { font-size: .85rem; margin-bottom: .2rem; }
.barchart .bar-ok { fill: #34a853; } .barchart .bar-failed { fill: #d93025; } .barchart .bar-hit { fill: transparent; }
.barchart .bar-hit:hover { fill: rgba(0, 0, 0, .06); }
.barchart .axis { stroke: var(--line); } .barchart .tick { font-size: 9px; fill: var(--muted); }
.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .3rem 0 .6rem; }
input, select, button { font: inherit; padding: .3rem .55rem; border: 1px solid #c9c9ce; border-radius: 6px; background: #fff; }
button { cursor: pointer; background: var(--panel); }
button:hover:not(:disabled) { background: #e8e8ed; }
button:disabled { opacity: .45; cursor: default; }
button.danger:not(:disabled) { color: var(--bad); border-color: #e6b3bb; }
button.primary { background: var(--accent); color: #fff; border-color: var(--accent); }
.bulk { display: flex; gap: .5rem; align-items: center; padding: .4rem .6rem; background: var(--panel); border-radius: 6px; }
.bulk > span { margin-right: auto; }
.actions { display: flex; gap: .4rem; flex-wrap: wrap; margin: .4rem 0; }
td .actions { flex-wrap: nowrap; margin: 0; }
table.grid code { white-space: nowrap; }
.pager { display: flex; gap: 1rem; }
.detail-title { margin-bottom: .1rem; }
.facts { display: grid; grid-template-columns: max-content 1fr max-content 1fr; gap: .25rem 1rem; margin: .8rem 0; }
.facts dt { color: var(--muted); } .facts dd { margin: 0; }
.progress { position: relative; height: 1.2rem; min-width: 8rem; background: #ececf0; border-radius: 6px; overflow: hidden; }
.progress-fill { position: absolute; inset: 0 auto 0 0; background: #9cc3ef; }
.progress-label { position: relative; padding: 0 .4rem; font-size: .75rem; line-height: 1.2rem; white-space: nowrap; }
pre { background: var(--panel); padding: .6rem .8rem; border-radius: 6px; overflow: auto; max-height: 24rem; margin: .3rem 0; white-space: pre-wrap; overflow-wrap: anywhere; }
pre.stack { font-size: .78rem; }
details summary { cursor: pointer; color: var(--accent); font-size: .85rem; }
.error-box { border-left: 3px solid var(--bad); padding: .3rem .7rem; background: #fff7f8; }
.flash { position: fixed; bottom: 1rem; right: 1rem; max-width: 40rem; padding: .6rem 1rem; border-radius: 8px; background: #e3f4e8; color: var(--ok); box-shadow: 0 2px 10px rgba(0,0,0,.12); z-index: 5; }
.flash.error { background: #fde8eb; color: var(--bad); }
dialog { border: 1px solid var(--line); border-radius: 10px; padding: 1rem 1.2rem; max-width: 32rem; }
dialog::backdrop { background: rgba(0, 0, 0, .25); }
dialog h2 { margin-top: 0; }
dialog .actions { justify-content: flex-end; }
.graph { overflow: auto; border: 1px solid var(--line); border-radius: 8px; padding: .4rem; background: #fcfcfd; }
svg.dag .node rect { fill: #fff; stroke: #b9b9c0; stroke-width: 1.2; }
svg.dag .node.focus rect { stroke: var(--accent); stroke-width: 2.4; }
svg.dag .node.st-succeeded rect { fill: #eaf6ee; stroke: #7cc293; }
svg.dag .node.st-failed rect { fill: #fdecee; stroke: #e58a98; }
svg.dag .node.st-active rect, svg.dag .node.st-executing rect { fill: #e8f0fb; stroke: #7eaae6; }
svg.dag .node.st-queued rect { fill: #fff6e8; stroke: #e5b46a; }
svg.dag .node.st-waiting rect { fill: #f3effb; stroke: #b3a1e0; }
svg.dag .node.kind-batch rect { stroke-dasharray: 5 3; }
svg.dag .node-label { font-size: 12px; font-weight: 600; fill: var(--fg); }
svg.dag .node-sub { font-size: 10px; fill: var(--muted); }
svg.dag a:hover rect { stroke: var(--accent); }
svg.dag .edge path { fill: none; stroke: #9a9aa2; stroke-width: 1.3; }
svg.dag .edge.on-failure path { stroke: #d93025; stroke-dasharray: 4 3; }
svg.dag .edge.on-always path { stroke: #8a6d00; stroke-dasharray: 1 3; }
svg.dag .edge-label { font-size: 9px; fill: var(--muted); }
svg.dag .arrowhead { fill: #9a9aa2; }
.source { font-size: .72rem; padding: 0 .3rem; border-radius: 4px; background: #eee; color: var(--muted); }
.source-runtime { background: #fff3e0; color: var(--warn); }
@media (max-width: 900px) { .cards { grid-template-columns: repeat(4, minmax(0, 1fr)); } .facts { grid-template-columns: max-content 1fr; } }
`;
