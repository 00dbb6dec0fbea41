/**
 * The page's stylesheet, inlined (no external asset). Colours are chosen for WCAG AA contrast (4.5:1 and
 * more for text); every mark is a word too, never a colour alone. One column on a phone, two on a laptop.
 */
export const PAGE_CSS = `
:root { --fg: #1b1f24; --muted: #4a5360; --bg: #ffffff; --panel: #f4f6f8; --line: #c9d1d9; --accent: #0b57d0;
  --live: #116329; --replay: #0b57d0; --duplicate: #9a3c00; --conflicting: #b3261e; --foreign: #6f2da8; --focus: #b35900; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header, main { padding: 12px 16px; }
header { border-bottom: 1px solid var(--line); background: var(--panel); }
h1 { font-size: 1.25rem; margin: 0 0 8px; }
h2 { font-size: 1.05rem; margin: 0 0 8px; }
.stats { display: flex; flex-wrap: wrap; gap: 8px 20px; margin: 0; }
.stats div { min-width: 8rem; }
.stats dt { color: var(--muted); font-size: .8rem; overflow-wrap: anywhere; }
.stats dd { margin: 0; font-weight: 600; font-variant-numeric: tabular-nums; }
details.limits { margin-top: 6px; color: var(--muted); }
details.limits code { color: var(--fg); }
main { display: grid; grid-template-columns: minmax(0, 1fr); gap: 16px; }
@media (min-width: 900px) { main { grid-template-columns: minmax(18rem, 2fr) minmax(0, 3fr); } }
.filters { display: flex; flex-wrap: wrap; gap: 8px; margin-bottom: 8px; }
.filters label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); }
select, button { font: inherit; color: var(--fg); }
select { padding: 4px; border: 1px solid var(--muted); border-radius: 4px; background: var(--bg); min-width: 9rem; }
ol.findings { list-style: none; margin: 0; padding: 0; }
ol.findings li { margin: 0 0 6px; }
.finding { display: block; width: 100%; text-align: left; padding: 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); cursor: pointer; }
.finding[aria-current="true"] { border-color: var(--accent); box-shadow: inset 4px 0 0 var(--accent); }
.finding .kind { font-weight: 700; }
.finding .meta, .record { color: var(--muted); font-size: .85rem; overflow-wrap: anywhere; }
.record { display: block; margin-top: 4px; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.empty { color: var(--muted); }
.ids { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 12px; font-size: .85rem; margin: 0 0 12px; }
.ids dt { color: var(--muted); }
.ids dd { margin: 0; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.chart { border: 1px solid var(--line); border-radius: 6px; padding: 8px; overflow-x: auto; }
.lane { display: grid; grid-template-columns: 9rem minmax(16rem, 1fr); align-items: center; min-height: 48px; border-bottom: 1px dashed var(--line); }
.lane-name { font-family: ui-monospace, monospace; font-size: .8rem; overflow-wrap: anywhere; padding-right: 6px; }
/* The right margin keeps an event at the very end (the last result) inside the chart. */
.track { position: relative; height: 46px; margin-right: 2.5rem; }
.bar { position: absolute; top: 20px; height: 6px; background: var(--line); border-radius: 3px; }
.end-mark { position: absolute; top: 28px; transform: translateX(-50%); font-size: 11px; white-space: nowrap; }
.bar.end-timeout, .bar.end-aborted, .bar.end-stream_broken, .bar.end-cancelled, .bar.end-_OTHER { background: #c0392b; }
.end-mark.end-timeout, .end-mark.end-aborted, .end-mark.end-stream_broken, .end-mark.end-cancelled { color: #c0392b; }
.ev { position: absolute; top: 0; transform: translateX(-50%); min-width: 22px; height: 24px; padding: 0 4px; border-radius: 12px;
  border: 2px solid currentColor; background: var(--bg); font-size: .7rem; font-weight: 700; line-height: 20px; text-align: center; white-space: nowrap; cursor: pointer; }
/* Terminals below, resumes and reattaches above: events at one moment stay apart. */
.ev.terminal { border-radius: 3px; top: 22px; }
.ev.guard::after { content: "G"; position: absolute; top: -8px; right: -8px; background: var(--fg); color: var(--bg); border-radius: 6px; padding: 0 3px; font-size: .6rem; line-height: 12px; }
.mark-live { color: var(--live); } .mark-replay { color: var(--replay); } .mark-duplicate { color: var(--duplicate); }
.mark-conflicting { color: var(--conflicting); } .mark-foreign { color: var(--foreign); } .ev.other { color: var(--muted); }
/* A 2026-07-28 re-issue: the first attempt's broken stream, and what the server did after the cancellation. */
/* Below the request's C, as terminals are: a short first attempt's start and end stay apart. */
.ev.broken, .ev.ran_on, .ev.stopped { top: 22px; }
.ev.broken { color: var(--conflicting); border-style: dashed; } .ev.ran_on { color: var(--duplicate); } .ev.stopped { color: var(--live); }
.track .unknown { position: absolute; inset: 8px 0; border: 1px dashed var(--muted); border-radius: 4px; padding: 0 6px; color: var(--muted); font-size: .8rem; line-height: 28px; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
.reissue-note, .task-note { font-size: .9rem; margin: 4px 0; }
/* A task's lanes: its creation and status changes above, what the answers carried (the outcome, gone) and the ttl's end below; polls as ticks. */
.ev.created { color: var(--accent); } .ev.status_change { color: var(--fg); }
.ev.delivered, .ev.gone, .ev.ttl { top: 22px; border-radius: 3px; }
.ev.delivered { color: var(--live); } .ev.gone { color: var(--conflicting); } .ev.ttl { color: var(--duplicate); border-style: dashed; }
.ev.poll_tick { min-width: 0; width: 4px; height: 22px; top: 12px; padding: 0; border: 0; border-radius: 1px; background: var(--muted); }
.story { font-weight: 600; margin: 6px 0; }
.axis { display: grid; grid-template-columns: 9rem minmax(16rem, 1fr); font-size: .75rem; color: var(--muted); }
.axis .ticks { position: relative; height: 18px; margin-right: 2.5rem; }
.axis .ticks span { position: absolute; transform: translateX(-50%); white-space: nowrap; }
.axis .ticks span:first-child { transform: none; }
.axis .ticks span:last-child { transform: translateX(-100%); }
table.events { width: 100%; border-collapse: collapse; margin-top: 12px; font-size: .85rem; }
table.events th, table.events td { text-align: left; padding: 4px 6px; border-bottom: 1px solid var(--line); vertical-align: top; }
table.events td { overflow-wrap: anywhere; }
table.events tr.selected { background: var(--panel); }
.note { color: var(--muted); font-size: .85rem; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 12px; font-size: .8rem; margin: 6px 0; }
@media (max-width: 600px) { .lane, .axis { grid-template-columns: 5.5rem minmax(14rem, 1fr); } table.events .span { display: none; } }
`;
