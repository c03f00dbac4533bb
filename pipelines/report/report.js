(function () {
  var root = document.documentElement;
  var table = document.getElementById('calls');
  var rows = Array.prototype.slice.call(table.querySelectorAll('tbody tr.call'));
  var texts = rows.map(function (row) {
    var d = row.nextElementSibling;
    return (row.textContent + ' ' + (d && d.classList.contains('detail') ? d.textContent : '')).toLowerCase();
  });
  var status = document.getElementById('call-filter-status');
  var segments = Array.prototype.slice.call(document.querySelectorAll('.seg'));
  var controls = {};
  ['run', 'tool', 'file', 'from', 'to', 'q'].forEach(function (k) { controls[k] = document.getElementById('f-' + k); });
  var chart = null;
  var CHART_KEYS = ['tool', 'emptiness', 'outcome', 'bucket'];
  var COLUMNS = {tool: 'tool', emptiness: 'emptiness_label', outcome: 'outcome', run: 'run_id', file: 'source_file'};
  var queryBox = document.getElementById('call-query');
  var allCalls = Number(table.getAttribute('data-calls') || rows.length);
  function value(k) { return controls[k] ? controls[k].value.trim() : ''; }
  function count(n) { return Number(n).toLocaleString('en-US'); }
  function sqlText(v) { return "'" + v.replace(/'/g, "''") + "'"; }
  // The query over the views that lists every call the chosen segment and filters select (search aside).
  function query() {
    var where = [];
    function add(k, v) {
      var clause = k === 'bucket' ? "bucket = TIMESTAMP '" + v + ":00+00'" : COLUMNS[k] + ' = ' + sqlText(v);
      if (where.indexOf(clause) < 0) { where.push(clause); }
    }
    if (chart) { CHART_KEYS.forEach(function (k) { if (chart.hasAttribute('data-' + k)) { add(k, chart.getAttribute('data-' + k)); } }); }
    ['run', 'tool', 'file'].forEach(function (k) { if (value(k)) { add(k, value(k)); } });
    if (value('from')) { where.push("CAST(ended_at AS DATE) >= DATE '" + value('from') + "'"); }
    if (value('to')) { where.push("CAST(ended_at AS DATE) <= DATE '" + value('to') + "'"); }
    return 'SELECT * FROM call_list' + (where.length ? ' WHERE ' + where.join(' AND ') : '') +
      ' ORDER BY ended_at, run_id, tool_call_id, occurrence';
  }
  // How many calls the selection holds in all, when the page knows it (a segment, a tool, or nothing chosen).
  function selectionTotal(set) {
    var toolOnly = set.length === 1 && set[0] === 'tool';
    if (chart && (!set.length || (toolOnly && value('tool') === chart.getAttribute('data-tool')))) {
      return [chart.getAttribute('data-label'), Number(chart.getAttribute('data-count'))];
    }
    if (!chart && toolOnly && controls.tool.selectedOptions.length) {
      return ['Tool ' + value('tool'), Number(controls.tool.selectedOptions[0].getAttribute('data-count'))];
    }
    return chart || set.length ? null : ['All tools', allCalls];
  }
  function matches(row, i) {
    if (chart) {
      for (var j = 0; j < CHART_KEYS.length; j++) {
        var k = CHART_KEYS[j];
        if (chart.hasAttribute('data-' + k) && row.getAttribute('data-' + k) !== chart.getAttribute('data-' + k)) { return false; }
      }
    }
    var date = row.getAttribute('data-date');
    var q = value('q').toLowerCase();
    return (!value('run') || row.getAttribute('data-run') === value('run')) &&
      (!value('tool') || row.getAttribute('data-tool') === value('tool')) &&
      (!value('file') || row.getAttribute('data-file') === value('file')) &&
      (!value('from') || (date && date >= value('from'))) &&
      (!value('to') || (date && date <= value('to'))) &&
      (!q || texts[i].indexOf(q) >= 0);
  }
  function setOpen(row, open) {
    var d = row.nextElementSibling;
    row.setAttribute('aria-expanded', open ? 'true' : 'false');
    var b = row.querySelector('button.expand');
    if (b) { b.textContent = open ? '\u25be' : '\u25b8'; b.setAttribute('aria-expanded', open ? 'true' : 'false'); }
    if (d && d.classList.contains('detail')) { d.hidden = !open || row.hidden; }
  }
  function state() {
    var p = [];
    Object.keys(controls).forEach(function (k) { if (value(k)) { p.push(k + '=' + encodeURIComponent(value(k))); } });
    if (chart) { p.push('seg=' + encodeURIComponent(chart.id)); }
    rows.forEach(function (row) { if (row.getAttribute('aria-expanded') === 'true') { p.push('open=' + encodeURIComponent(row.id)); } });
    return p.length ? '#' + p.join('&') : '';
  }
  function remember() {
    try { history.replaceState(null, '', location.pathname + location.search + state()); } catch (e) { /* file: URLs may refuse */ }
  }
  function apply(scroll) {
    var shown = 0;
    rows.forEach(function (row, i) {
      var ok = matches(row, i);
      row.hidden = !ok;
      setOpen(row, row.getAttribute('aria-expanded') === 'true');
      if (ok) { shown += 1; }
    });
    segments.forEach(function (s) { s.classList.toggle('selected', s === chart); });
    var set = Object.keys(controls).filter(function (k) { return value(k); });
    var known = selectionTotal(set);
    var text;
    if (known && shown === known[1]) {
      text = known[0] + ': all ' + count(shown) + ' calls shown.';
    } else if (known) {
      text = known[0] + ': showing ' + count(shown) + ' of ' + count(known[1]) + ' calls (this page embeds a sample);' +
        ' all of them:';
    } else {
      var parts = chart ? [chart.getAttribute('data-label')] : [];
      set.forEach(function (k) { parts.push(k + ': ' + value(k)); });
      text = 'Filtered by ' + parts.join(', ') + ': ' + count(shown) + ' of the ' + count(rows.length) +
        ' calls this page embeds' + (value('q') ? ' (the search looks at these only)' : '') + '; all that match:';
    }
    status.textContent = text;
    if (queryBox) { queryBox.textContent = known && shown === known[1] ? '' : query(); }
    root.setAttribute('data-shown', String(shown));
    root.setAttribute('data-total', known ? String(known[1]) : '');
    if (scroll) { document.getElementById('calls-section').scrollIntoView(); }
  }
  segments.forEach(function (seg) {
    var pick = function () { chart = seg; apply(true); remember(); };
    seg.addEventListener('click', pick);
    seg.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { pick(); } });
  });
  Object.keys(controls).forEach(function (k) {
    if (controls[k]) { controls[k].addEventListener('input', function () { apply(false); remember(); }); }
  });
  Array.prototype.slice.call(document.querySelectorAll('.tool-link')).forEach(function (link) {
    var pick = function () {
      chart = null;
      Object.keys(controls).forEach(function (k) { if (controls[k]) { controls[k].value = ''; } });
      controls.tool.value = link.getAttribute('data-tool');
      apply(true);
      remember();
    };
    link.addEventListener('click', pick);
    link.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { pick(); } });
  });
  table.addEventListener('click', function (e) {
    var b = e.target.closest ? e.target.closest('button.expand') : null;
    if (!b) { return; }
    var row = b.closest('tr');
    setOpen(row, row.getAttribute('aria-expanded') !== 'true');
    remember();
  });
  document.getElementById('show-all').addEventListener('click', function () {
    chart = null;
    Object.keys(controls).forEach(function (k) { if (controls[k]) { controls[k].value = ''; } });
    apply(false);
    remember();
  });
  function restore() {
    var hash = decodeURIComponent(location.hash.slice(1));
    if (!hash) { return; }
    var byId = document.getElementById(hash);
    if (byId && byId.classList.contains('seg')) { chart = byId; return; }
    location.hash.slice(1).split('&').forEach(function (pair) {
      var at = pair.indexOf('=');
      if (at < 0) { return; }
      var k = pair.slice(0, at), v = decodeURIComponent(pair.slice(at + 1));
      if (k === 'seg') {
        var s = document.getElementById(v);
        if (s && s.classList.contains('seg')) { chart = s; }
      } else if (k === 'open') {
        var r = document.getElementById(v);
        if (r && r.classList.contains('call')) { r.setAttribute('aria-expanded', 'true'); }
      } else if (controls[k]) {
        controls[k].value = v;
      }
    });
  }
  restore();
  apply(false);
  root.setAttribute('data-report-ready', '1');
})();
