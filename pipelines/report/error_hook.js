window.onerror = function (message) {
  var root = document.documentElement;
  root.setAttribute('data-js-errors', (root.getAttribute('data-js-errors') || '') + message + ';');
};
