// The console's only script (served from this origin; the page policy runs nothing else). It draws the telemetry
// charts with uPlot: per GPU and metric, the average as a line and the min..max of each bucket as a band. Pages read
// fine without it: every chart's caption also says the newest bucket's figures.
(() => {
  const COLORS = { line: '#1f5fbf', band: 'rgba(31, 95, 191, 0.15)', edge: 'rgba(31, 95, 191, 0.35)' };

  function dataOf(root) {
    const holder = root.querySelector('#telemetry-data') || document.getElementById('telemetry-data');
    const empty = { series: [] };
    if (!holder) return empty;
    try {
      return JSON.parse(holder.textContent || 'null') || empty;
    } catch {
      return empty;
    }
  }

  function draw(root) {
    if (typeof uPlot === 'undefined') return;
    const data = dataOf(root);
    const all = data.series;
    for (const box of root.querySelectorAll('.chart:not([data-drawn])')) {
      const gpu = Number(box.dataset.gpu);
      const found = all.find((s) => s.gpu === gpu && s.metric === box.dataset.metric);
      box.setAttribute('data-drawn', 'true');
      if (!found || found.t.length === 0) {
        box.setAttribute('data-points', '0');
        continue;
      }
      const width = Math.max(240, box.clientWidth || box.parentElement.clientWidth || 320);
      const options = {
        width,
        height: 170,
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
        // The whole window, so a machine that reported for five minutes shows one point at the right end.
        scales: { x: { time: true, range: () => [data.from, data.to] } },
        series: [
          {},
          { label: 'min', stroke: COLORS.edge, width: 1, points: { show: found.t.length < 3 } },
          { label: 'avg', stroke: COLORS.line, width: 2, points: { show: true, size: 6 } },
          { label: 'max', stroke: COLORS.edge, width: 1, points: { show: found.t.length < 3 } },
        ],
        // The band between max (series 3) and min (series 1).
        bands: [{ series: [3, 1], fill: COLORS.band }],
        axes: [{}, { label: found.unit, size: 56 }],
      };
      const chart = new uPlot(options, [found.t, found.min, found.avg, found.max], box);
      box.setAttribute('data-points', String(found.t.length));
      box._chart = chart;
    }
  }

  function resize() {
    for (const box of document.querySelectorAll('.chart[data-drawn]')) {
      if (box._chart) box._chart.setSize({ width: Math.max(240, box.clientWidth), height: 170 });
    }
  }

  // "Copy" buttons: the text of the element their data-copy names (the SSH command).
  document.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
    if (!button) return;
    const source = document.querySelector(button.getAttribute('data-copy'));
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(
      () => {
        button.textContent = 'Copied';
      },
      () => {
        button.textContent = 'Select and copy';
      },
    );
  });

  document.addEventListener('DOMContentLoaded', () => draw(document));
  // htmx swaps in a fresh telemetry section every minute: draw what it brought.
  document.addEventListener('htmx:afterSettle', (event) => draw(event.target instanceof Element ? event.target.ownerDocument : document));
  let pending = 0;
  window.addEventListener('resize', () => {
    clearTimeout(pending);
    pending = setTimeout(resize, 150);
  });
})();
