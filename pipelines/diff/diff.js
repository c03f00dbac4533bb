(function () {
  var calls = Array.prototype.slice.call(document.querySelectorAll('#changed tbody tr'));
  var picks = Array.prototype.slice.call(document.querySelectorAll('tr.pick'));
  var status = document.getElementById('filter-status');
  function apply(pick) {
    var token = pick ? ' ' + pick.id + ' ' : null;
    var shown = 0;
    calls.forEach(function (row) {
      var ok = !token || (' ' + row.getAttribute('data-moves') + ' ').indexOf(token) >= 0;
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    picks.forEach(function (p) { p.classList.toggle('selected', p === pick); });
    status.textContent = pick ? pick.getAttribute('data-label') + ': ' + shown + ' of ' +
      pick.getAttribute('data-count') + ' calls listed.' : 'All listed calls: ' + shown + '.';
  }
  picks.forEach(function (p) {
    p.addEventListener('click', function () {
      try { history.replaceState(null, '', location.pathname + '#' + p.id); } catch (e) { /* file: URLs may refuse */ }
      apply(p);
    });
  });
  document.getElementById('show-all').addEventListener('click', function () { apply(null); });
  var initial = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
  apply(initial && initial.classList.contains('pick') ? initial : null);
  document.documentElement.setAttribute('data-diff-ready', '1');
})();
