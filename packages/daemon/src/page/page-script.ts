/**
 * The page's script, inlined (no external asset; it runs the same from /, from a file:// report and
 * offline). It reads the data from a JSON script block, builds every element with textContent (never
 * HTML from data), and, on a live page, fetches the data again every few seconds. It only reads.
 *
 * A detector run with --token answers the page without its data (401) and the data only with the
 * token: the page takes it once from its address's fragment (#token=…, which a browser never sends
 * to a server, so no server or proxy log holds it), removes it from the address bar, keeps it in memory
 * only, and sends it as the Authorization header of its data requests.
 *
 * A live page's data holds no timeline (conf.timelinePath): the page fetches the timeline of the finding
 * it shows when it is opened, and again with each refresh while it is shown, so that no answer of the
 * detector draws more than one request. A report holds them all (data.timelines) and fetches nothing.
 */
export const PAGE_SCRIPT = `
(function () {
  'use strict';
  /** Null when the detector asks for a token this page was served without: the data comes by fetch. */
  var data = JSON.parse(document.getElementById('page-data').textContent);
  var conf = JSON.parse(document.getElementById('page-config').textContent);
  var token = tokenFromFragment();
  var filter = { kind: '', service: '', server: '' };
  var selected = null;
  var shownFindings = '';
  var shownDetail = '';
  /** The fetched timeline of one request (a live page's): undefined while it loads, null when none is held. */
  var loaded = { key: null, tl: undefined, pending: false };

  function h(tag, props, children) {
    var el = document.createElement(tag);
    if (props) for (var k in props) {
      if (props[k] === null || props[k] === undefined) continue;
      if (k === 'text') el.textContent = props[k];
      else if (k === 'cls') el.className = props[k];
      // Through the CSSOM, which the page's policy allows: a style attribute is inline style it refuses.
      else if (k === 'style') for (var p in props[k]) el.style[p] = props[k][p];
      else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), props[k]);
      else el.setAttribute(k, props[k]);
    }
    (children || []).forEach(function (c) { if (c) el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return el;
  }
  // The token is the fragment's raw text after token= up to the next & or the end, percent-decoded by
  // decodeURIComponent alone: a + stays a + (URLSearchParams would make it a space); % and & are written
  // %25 and %26, as encodeURIComponent writes them. Text that is not valid percent-encoding is taken as it is.
  function tokenFromFragment() {
    var parts = location.hash.slice(1).split('&'), t = null;
    for (var i = 0; i < parts.length && t === null; i++) if (parts[i].slice(0, 6) === 'token=') t = parts[i].slice(6);
    if (t === null) return '';
    history.replaceState(null, '', location.pathname + location.search);
    try { return decodeURIComponent(t); } catch (e) { return t; }
  }
  // The key of a finding's request (its timeline in data.timelines), as the data gives it for each finding.
  var keys = new Map();
  function readKeys() { keys = new Map(); data.findings.forEach(function (f, i) { keys.set(f, data.request_keys[i]); }); }
  function keyOf(f) { return keys.get(f); }
  function idOf(f) { return keyOf(f) + ' ' + f.kind + ' ' + f.first_time_unix_ms; }
  function time(ms) { return new Date(ms).toISOString().replace('T', ' ').replace('Z', ' UTC'); }
  function span(ms) { return ms >= 10000 ? (ms / 1000).toFixed(1) + ' s' : ms >= 1000 ? (ms / 1000).toFixed(2) + ' s' : Math.round(ms) + ' ms'; }
  function num(n) { return n === null || n === undefined ? 'n/a' : (Math.round(n * 10) / 10).toLocaleString('en'); }

  /** Findings newest first, each with the records (storm ended, retraction) that change it. */
  function entries() {
    var out = [], byFinding = {};
    data.findings.forEach(function (f) {
      if (f.record === undefined) { var e = { finding: f, records: [] }; out.push(e); byFinding[keyOf(f) + ' ' + f.kind] = byFinding[keyOf(f) + ' ' + f.kind] || e; }
    });
    data.findings.forEach(function (f) {
      if (f.record === undefined) return;
      var e = byFinding[keyOf(f) + ' ' + f.kind];
      if (e) e.records.push(f); else out.push({ finding: f, records: [] });
    });
    return out.sort(function (a, b) { return b.finding.last_time_unix_ms - a.finding.last_time_unix_ms; });
  }
  function visible(e) {
    var f = e.finding;
    return (!filter.kind || f.kind === filter.kind) && (!filter.service || f.service === filter.service) && (!filter.server || f.server === filter.server);
  }

  function renderHeader() {
    var hd = data.header, eras = hd.eras, total = 0, parts = [];
    for (var era in eras) total += eras[era];
    for (var era2 in eras) parts.push(era2 + ' ' + (total ? Math.round((eras[era2] * 100) / total) : 0) + '%');
    var stats = [
      ['Findings held', String(data.findings.length + data.omitted)],
      ['Tracked requests', num(hd.tracked_requests)],
      ['Open storms', num(hd.open_storms)],
      ['Spans per second', hd.source === 'report' ? 'n/a (report)' : num(hd.spans_per_second)],
      ['Era share (' + total + ' MCP requests)', total ? parts.join(', ') : 'no request seen'],
      ['Evidence', hd.evidence.requests + ' requests, ' + num(hd.evidence.bytes / 1024) + ' KiB'],
    ];
    // The door's own counts (the gateway's refusals and guard actions), as its /metrics has them.
    Object.keys(hd.door || {}).forEach(function (name) {
      var series = hd.door[name], keys = Object.keys(series);
      stats.push([name, keys.length ? keys.map(function (k) { return (k ? k + ': ' : '') + num(series[k]); }).join(', ') : 'none']);
    });
    var dl = h('dl', { cls: 'stats' }, stats.map(function (s) { return h('div', null, [h('dt', { text: s[0] }), h('dd', { text: s[1] })]); }));
    var limits = h('details', { cls: 'limits' }, [h('summary', { text: 'Limits it runs under' }),
      h('p', null, Object.keys(hd.limits).map(function (k) { return h('span', null, [h('code', { text: k }), ' ' + num(hd.limits[k]) + '  ']); }))]);
    var head = document.getElementById('head');
    head.replaceChildren(h('h1', { text: conf.title }), dl, limits,
      h('p', { cls: 'note', text: (hd.source === 'report' ? 'Report written ' : 'Updated ') + time(hd.generated_unix_ms) + (data.omitted ? '; ' + data.omitted + ' older findings left out by the byte bound' : '') }));
  }

  function renderFilters() {
    var all = entries(), box = document.getElementById('filters');
    function options(name, label, pick) {
      var values = {};
      all.forEach(function (e) { var v = pick(e.finding); if (v !== undefined) values[v] = true; });
      var sel = h('select', { id: 'filter-' + name, onchange: function () { filter[name] = sel.value; renderList(); } },
        [h('option', { value: '', text: 'all' })].concat(Object.keys(values).sort().map(function (v) { return h('option', { value: v, text: v }); })));
      sel.value = filter[name] in values ? filter[name] : '';
      filter[name] = sel.value;
      return h('label', { for: 'filter-' + name }, [label, sel]);
    }
    box.replaceChildren(options('kind', 'Kind', function (f) { return f.kind; }),
      options('service', 'Service', function (f) { return f.service; }),
      options('server', 'Server', function (f) { return f.server; }));
  }

  function renderList() {
    var list = document.getElementById('findings'), focused = document.activeElement && document.activeElement.dataset && document.activeElement.dataset.id;
    var shown = entries().filter(visible);
    if (selected === null && shown.length) selected = idOf(shown[0].finding);
    list.replaceChildren.apply(list, shown.map(function (e) {
      var f = e.finding, id = idOf(f);
      var button = h('button', { cls: 'finding', type: 'button', 'data-id': id, 'aria-current': String(id === selected),
        onclick: function () { selected = id; renderList(); renderDetail(); document.getElementById('detail').focus(); } }, [
        h('span', { cls: 'kind', text: f.record ? f.kind + ' (' + f.record + ')' : f.kind }),
        h('span', { cls: 'meta', text: ' ' + f.service + (f.server ? ' \\u00b7 server ' + f.server : '') }),
        h('span', { cls: 'meta', text: ' \\u00b7 ' + subject(f) + ' \\u00b7 ' + time(f.last_time_unix_ms) }),
      ].concat(e.records.map(function (r) { return h('span', { cls: 'record', text: '\\u21b3 ' + r.record + (r.ended_by ? ': ended ' + r.ended_by + (r.attempts ? ' after ' + r.attempts + ' attempts' : '') : '') + ' at ' + time(r.last_time_unix_ms) }); })));
      return h('li', null, [button]);
    }));
    if (!shown.length) list.replaceChildren(h('li', { cls: 'empty', text: data.findings.length ? 'No finding matches the filters.' : 'No finding.' }));
    if (focused) { var again = list.querySelector('[data-id="' + CSS.escape(focused) + '"]'); if (again) again.focus(); }
    shownFindings = JSON.stringify(data.findings.length) + (data.findings[0] ? idOf(data.findings[0]) : '');
  }

  function auth() { return token ? { Authorization: 'Bearer ' + token } : {}; }
  /** The timeline of request key: the data's (a report), or the one fetched (undefined while it loads). */
  function timelineOf(key) {
    if (!conf.timelinePath || key in data.timelines) return data.timelines[key] || null;
    if (loaded.key !== key) loadTimeline(key);
    return loaded.tl;
  }
  function loadTimeline(key) {
    if (loaded.key !== key) loaded = { key: key, tl: undefined, pending: false };
    if (loaded.pending) return;
    loaded.pending = true;
    fetch(conf.timelinePath + '?key=' + encodeURIComponent(key), { cache: 'no-store', headers: auth() }).then(function (r) {
      // 404: the detector lists that request no more (its data is newer than the page's): none to draw.
      return r.ok ? r.json() : r.status === 404 ? { timeline: null } : null;
    }).then(function (body) {
      if (loaded.key !== key) return;
      loaded.pending = false;
      if (!body) return;
      loaded.tl = body.timeline;
      var e = current();
      if (e && keyOf(e.finding) === key && detailState(e) !== shownDetail) renderDetail();
    }, function () { if (loaded.key === key) loaded.pending = false; });
  }
  /** What the detail shows, in a word: a change of it redraws the detail. */
  function detailState(e) {
    var tl = timelineOf(keyOf(e.finding));
    return selected + ' ' + (tl === undefined ? 'loading' : tl ? tl.events.length + tl.dropped : 'none') + ' ' + e.records.length;
  }

  function current() {
    var all = entries();
    for (var i = 0; i < all.length; i++) if (idOf(all[i].finding) === selected) return all[i];
    return null;
  }

  function renderDetail() {
    var box = document.getElementById('detail'), e = current();
    if (!e) { box.replaceChildren(h('p', { cls: 'empty', text: data.findings.length ? 'Choose a finding to see its request.' : 'No finding: nothing to draw.' })); shownDetail = ''; return; }
    var f = e.finding, tl = timelineOf(keyOf(f));
    shownDetail = detailState(e);
    var ids = h('dl', { cls: 'ids' }, []);
    // A time is shown as a date and time (its Unix milliseconds stay in the data and in /findings).
    Object.keys(f).forEach(function (k) {
      var at = /_unix_ms$/.test(k) && typeof f[k] === 'number';
      ids.appendChild(h('dt', { text: at ? k.replace(/_unix_ms$/, '').replace(/_/g, ' ') : k }));
      ids.appendChild(h('dd', { text: at ? time(f[k]) : Array.isArray(f[k]) ? f[k].join(', ') : String(f[k]) }));
    });
    var parts = [h('h2', { id: 'detail-title', text: (f.record ? f.kind + ' (' + f.record + ')' : f.kind) + ' on ' + subject(f) }), ids];
    e.records.forEach(function (r) { parts.push(h('p', { cls: 'note', text: 'Changed by ' + r.record + (r.ended_by ? ' (' + r.ended_by + ')' : '') + ' at ' + time(r.last_time_unix_ms) })); });
    if (tl === undefined) parts.push(h('p', { cls: 'note', text: 'Loading the request\u2019s timeline\u2026' }));
    else if (!tl) parts.push(h('p', { cls: 'note', text: 'No evidence held for this request (left out by the evidence byte cap).' }));
    else parts.push(timeline(tl));
    box.replaceChildren.apply(box, parts);
  }

  /** What a finding is about: its task (a task finding), else its request. */
  function subject(f) { return f.task_id ? 'task ' + f.task_id : 'request ' + f.request_id; }

  // X, F, S: a 2026-07-28 re-issue's moments (its first attempt's stream broke; the server finished it, or stopped).
  var SHORT = { terminal: 'T', resume: 'R', reattach: 'A', call: 'C', broken: 'X', ran_on: 'F', stopped: 'S', listening_refused: 'N' };
  function label(ev) { return ev.what || ev.type + (ev.mark ? ' ' + ev.mark : '') + (ev.outcome ? ' ' + ev.outcome : '') + (ev.guard ? ', guard ' + ev.guard : ''); }
  function laneName(lane) { return lane.label || (lane.stream ? lane.stream + (lane.resumed ? ' (resumed)' : '') : 'the request'); }
  function timeline(tl) {
    var width = Math.max(1, tl.end - tl.start);
    function at(t) { return Math.min(100, Math.max(0, ((t - tl.start) * 100) / width)); }
    var rows = tl.lanes.map(function (lane) { return h('div', { cls: 'lane', role: 'group', 'aria-label': lane.label || (lane.stream ? 'stream ' + lane.stream : 'the request') }, [
      h('div', { cls: 'lane-name', text: laneName(lane) }), h('div', { cls: 'track' }, lane.unknown ? [h('span', { cls: 'unknown', text: 'not known: ' + lane.unknown })] : [])]); });
    var table = h('tbody');
    tl.events.forEach(function (ev, i) {
      var track = rows[ev.lane].lastChild, cls = ev.mark ? 'mark-' + ev.mark : 'other';
      // A request's life: a bar from its start to its end, its end marked by what ended it (result, deadline, abort, broken stream, cancel).
      if (ev.type === 'call') track.appendChild(h('div', { cls: 'bar' + (ev.ended ? ' life end-' + ev.ended : ''), role: ev.ended ? 'img' : null,
        'aria-label': ev.ended ? 'request lived ' + span(ev.end - ev.start) + ', ended: ' + ev.ended_said : null, 'data-ended': ev.ended || null,
        style: { left: at(ev.start) + '%', width: Math.max(0.5, at(ev.end) - at(ev.start)) + '%' } }));
      if (ev.ended) track.appendChild(h('span', { cls: 'end-mark end-' + ev.ended, 'data-ended': ev.ended, style: { left: at(ev.end) + '%' }, title: 'ended: ' + ev.ended_said, text: '\u25c6 ' + ev.ended_said }));
      var row = h('tr', { id: 'ev-' + i }, [h('td', { text: '+' + span(ev.start - tl.start) }), h('td', { text: tl.lanes[ev.lane].label || tl.lanes[ev.lane].stream || 'the request' }),
        h('td', { text: label(ev) + (ev.ended ? ' (lived ' + span(ev.end - ev.start) + ', ended: ' + ev.ended_said + ')' : '') }), h('td', { text: ev.facts.join('; ') }), h('td', { cls: 'span', text: ev.span_id })]);
      table.appendChild(row);
      track.appendChild(h('button', { type: 'button', cls: 'ev ' + ev.type + ' ' + cls + (ev.guard ? ' guard' : ''), style: { left: at(ev.start) + '%' },
        title: label(ev), 'aria-label': label(ev) + ' at +' + span(ev.start - tl.start), 'data-mark': ev.mark || '',
        onclick: function () { Array.prototype.forEach.call(table.children, function (r) { r.classList.remove('selected'); }); row.classList.add('selected'); row.scrollIntoView({ block: 'nearest' }); } },
        [ev.short !== undefined ? ev.short : (SHORT[ev.type] || '?') + (ev.mark ? ' ' + ev.mark : '')]));
    });
    var ticks = h('div', { cls: 'ticks', 'aria-hidden': 'true' }, [0, 25, 50, 75, 100].map(function (p) { return h('span', { style: { left: p + '%' }, text: '+' + span((width * p) / 100) }); }));
    var task = tl.task === true;
    var moments = task ? 'On a task\u2019s lanes: created, each change of status, outcome (the result or the error reached the client), gone (the server said so), ttl (its announced ttl ran out); a tick: a poll (tasks/get).'
      : tl.events.some(function (ev) { return ev.what; }) ? ' X: the first attempt\u2019s stream broke; F: the server finished it after the cancellation; S: the server stopped.' : '';
    var legend = h('p', { cls: 'legend' }, [h('span', { text: (task ? (tl.events.some(function (ev) { return ev.type === 'call'; }) ? 'C a request. ' : '') : 'T terminal, R resume, A reattach, C the request; G: the guard or gateway acted.' + (tl.events.some(function (ev) { return ev.type === 'listening_refused'; }) ? ' N: a GET of the listening stream the server refused.' : '')) + moments +
      (tl.events.some(function (ev) { return ev.ended; }) ? ' A bar: a request\u2019s life; \u25c6 what ended it (its result, the deadline, an abort, a broken stream, a cancel, a refusal).' : '') })].concat(
      task ? [] : conf.marks.map(function (m) { return h('span', { cls: 'mark-' + m, text: '\u25a0 ' + m }); })));
    return h('section', { 'aria-label': 'request timeline' }, [h('h2', { text: 'Timeline: ' + tl.lanes.length + ' lanes, ' + tl.events.length + ' events' + (tl.dropped ? ' (' + tl.dropped + ' more left out)' : '') }),
      h('p', { cls: 'note', text: 'From ' + time(tl.start) + ' to ' + time(tl.end) + '; times below are from its start.' })].concat(
      tl.story ? [h('p', { cls: 'story', text: tl.story })] : [],
      (tl.notes || []).map(function (n) { return h('p', { cls: task ? 'task-note' : 'reissue-note', text: n }); }), [
      legend, h('div', { cls: 'chart' }, rows.concat([h('div', { cls: 'axis' }, [h('span', { text: 'time' }), ticks])])),
      h('table', { cls: 'events' }, [h('thead', null, [h('tr', null, ['when', task ? 'lane' : tl.notes ? 'attempt, side' : 'stream', 'event', 'attributes', 'span'].map(function (t) { return h('th', { scope: 'col', text: t, cls: t === 'span' ? 'span' : '' }); }))]), table])]));
  }

  document.getElementById('findings').addEventListener('keydown', function (ev) {
    if (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp') return;
    var all = Array.prototype.slice.call(this.querySelectorAll('.finding')), i = all.indexOf(document.activeElement);
    var next = all[i + (ev.key === 'ArrowDown' ? 1 : -1)];
    if (next) { next.focus(); ev.preventDefault(); }
  });

  function renderAll() { renderHeader(); renderFilters(); renderList(); renderDetail(); }
  var HOW = 'Open this page as ' + location.origin + location.pathname + '#token=YOUR_TOKEN (percent-encoded as encodeURIComponent does, at least % as %25 and & as %26; a + stays a +): the part after # stays in this browser, and the page sends it only as the Authorization header of its data requests.';
  var timer = null;
  function stop(message) {
    if (timer !== null) clearInterval(timer);
    timer = null;
    document.getElementById('updates').textContent = message;
  }
  function renderLocked() {
    document.getElementById('head').replaceChildren(h('h1', { text: conf.title }));
    document.getElementById('findings').replaceChildren(h('li', { cls: 'empty', text: 'No data without the token.' }));
    document.getElementById('detail').replaceChildren();
  }
  function refresh() {
    fetch(conf.dataPath, { cache: 'no-store', headers: auth() }).then(function (r) {
      if (r.status === 401) { stop((token ? 'The token was refused (401). ' : 'This detector asks for its bearer token (--token). ') + HOW); return null; }
      if (!r.ok) { stop('Updates stopped (' + r.status + '); reload the page.'); return null; }
      return r.json();
    }).then(function (next) {
      if (!next) return;
      var first = data === null;
      data = next;
      readKeys();
      if (first) return renderAll();
      renderHeader();
      var before = shownFindings;
      renderFilters();
      if ((JSON.stringify(data.findings.length) + (data.findings[0] ? idOf(data.findings[0]) : '')) !== before) renderList();
      var e = current();
      if (!e || detailState(e) !== shownDetail) renderDetail();
      // The shown timeline may have grown: asked again (one request's), redrawn when it changed.
      else if (conf.timelinePath && !(keyOf(e.finding) in data.timelines)) loadTimeline(keyOf(e.finding));
    }, function () {});
  }
  if (data !== null) { readKeys(); renderAll(); } else renderLocked();
  if (conf.dataPath) {
    if (data === null && !token) stop('This detector asks for its bearer token (--token). ' + HOW);
    else {
      if (data === null) refresh();
      timer = setInterval(refresh, conf.refreshMs);
    }
  }
})();
`;
