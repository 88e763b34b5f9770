// The downloaded page: the app's explainer over the run's embedded timeline (no server, no network).
(function () {
  'use strict';
  const value = JSON.parse(document.getElementById('sv-timeline').textContent);
  window.SpotvizExplainer(document.getElementById('sv-page'), {value: value}, null);
})();
