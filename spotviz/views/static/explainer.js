// spotviz explainer: every view of a run driven by one pass scrubber. The app's explainer component calls
// SpotvizExplainer(element, props, watch) (Gradio's js_on_load); the downloaded page calls it with its embedded
// timeline. The value is the timeline (spotviz/views/timeline.py): JSON lines that only grow while a run streams,
// so each update parses just the new lines.
//
// At scrubber position k every view shows the state after pass k: the token canvases (text, one lane per run,
// fixed token slots so nothing reflows), the draft tree, the race, the acceptance per depth and the commit order
// (Plotly figures from SV.views, see views/*.js). Paints are throttled to animation frames and, while streaming,
// spaced by PAINT_SHARE times the script time of a paint (within MIN_PAINT_MS..MAX_PAINT_GAP_MS); figures are drawn
// one per animation frame, each only when its inputs changed. A live run is shown at a
// watchable pace (one pass per paint, more when the rest would take over LIVE_WATCH_MS: a fast model's run is
// still watched from pass 1, a slow machine's within seconds) and rests on its end.
//
// For tests the root carries data-state (idle / starting / live / done / stopped / error), data-pass (k),
// data-npasses, data-playing, data-session, data-renders (paints), data-tree-pass (the pass whose tree shows),
// data-drawn ("session:k" once every figure shows pass k) and data-step-ms (the player's pace per pass).
(function () {
  'use strict';
  const MIN_PAINT_MS = 120, MAX_PAINT_GAP_MS = 1500, PAINT_SHARE = 5, LIVE_STEP_MS = 110, LIVE_WATCH_MS = 8000;
  const PLAY_TREE_MS = 450, PLAY_TAIL_MS = 300;   // per pass at 1x: while trees change, then the rest
  const MASKED = '·';   // a masked slot: a grey box with a faint dot (one character wide, as every slot)

  function setStatus(text, kind) {   // the app's status line (#sv-status) belongs to Gradio: written on Stop and
    // for a clamped length only
    const st = document.querySelector('#sv-status .sv-status');
    if (st) { st.textContent = text; st.className = 'sv-status ' + (kind || 'info'); }
  }

  window.SpotvizExplainer = function (element, props, watch) {
    const SV = window.SV;
    // the status line is announced to screen readers: its container is the live region (Gradio replaces the
    // message inside it; a region inserted with its message already in it is often not announced)
    const statusBox = document.querySelector('#sv-status');
    if (statusBox && !statusBox.hasAttribute('aria-live')) {
      statusBox.setAttribute('role', 'status'); statusBox.setAttribute('aria-live', 'polite');
    }
    // the download links (Gradio's file list) are named by their size alone: name them by their file too
    // (watched from the accordion that holds the list: Gradio mounts the list only once the accordion opens)
    // (the accordion may mount after the explainer: looked for again until it is there)
    const watchDownloads = (tries) => {
      const downloads = document.querySelector('#sv-replay') || document.querySelector('#sv-download');
      if (!downloads) { if (tries > 0) setTimeout(() => watchDownloads(tries - 1), 250); return; }
      if (downloads.__svNamed) return;
      downloads.__svNamed = true;
      const name = () => {
        for (const a of downloads.querySelectorAll('#sv-download td.download a, #sv-download a[download]')) {
          const row = a.closest('tr'), file = row && row.querySelector('.filename');
          const named = file && (file.getAttribute('aria-label') || file.textContent.replace(/\s+/g, ''));
          const label = 'Download ' + (named || a.getAttribute('download') || 'file');
          if (a.getAttribute('aria-label') !== label) a.setAttribute('aria-label', label);
        }
      };
      // (text and link changes too: Gradio may keep a row and change only its name or link for the next run's file)
      new MutationObserver(name).observe(downloads, {childList: true, subtree: true, characterData: true,
                                                     attributes: true, attributeFilter: ['download', 'href']});
      name();
    };
    if (watch) watchDownloads(120);   // (the app's page: the downloaded page has no file list to name)
    const root = element.querySelector('.sve');
    const $ = (s) => root.querySelector(s);
    const headEl = $('.sve-headline'), noteEl = $('.sve-note'), guide = $('.sve-guide'), helpBtn = $('.sve-help');
    const playBtn = $('.sve-play'), prevBtn = $('.sve-prev'), nextBtn = $('.sve-next');
    const scrub = $('.sve-scrub'), posEl = $('.sve-pos'), speedSel = $('.sve-speed');
    const lanesEl = $('.sve-lanes'), treeCap = $('.sve-tree-cap'), whyEl = $('.sve-why'), tableEl = $('.sve-table');
    const plots = {};
    for (const d of root.querySelectorAll('.sve-plot')) plots[d.dataset.view] = d;
    const VIEWS = [['tree', SV.views.tree], ['race', SV.views.race], ['depth', SV.views.depth], ['order', SV.views.commitOrder]];
    const HEIGHTS = {race: 190, depth: 118, order: 170};

    let S = null, consumed = 0, head = '', K = 0, follow = true;
    let playing = false, playTimer = null, paintQueued = false, lastPaint = 0, paintTimer = null, liveTimer = null;
    let pausedBy = null;   // the run whose catching-up views Stop paused (it had ended on the server): the headline says so
    let ignoreId = null;   // a stopped session: later lines are ignored
    let incoming = null;   // the session the lines now arriving belong to
    let dropLive = false;  // Stop came before the run's first line: its session is dropped when it arrives
    let held = [];         // the stopped session's later lines, kept in case the run had finished on the server
    let lanes = new Map(), drawn = {}, tableFor = null;

    function span(cls, text) { const d = document.createElement('span'); d.className = cls; if (text != null) d.textContent = text; return d; }

    // ------------------------------------------------------------------------------------ lines in
    function newSession(line) {
      stopPlay(); clearTimeout(liveTimer); liveTimer = null; liveAwait = false;
      S = SV.newSession(line);
      K = 0; follow = true; drawn = {}; tableFor = null;
      root.dataset.session = S.id;
      headEl.textContent = ''; noteEl.textContent = ''; whyEl.textContent = ''; tableEl.textContent = '';
      // the guide: open on an example until closed; the ? button opens or closes it for every run after
      root.dataset.source = S.source || '';
      showGuide(window.__svGuide === undefined ? S.source === 'example' : window.__svGuide);
      lanesEl.textContent = ''; lanes = new Map();
      for (const role of S.order) lane(role);
    }
    function ingest(line) {
      if (line.t === 'session') {
        incoming = line.id || '';
        if (dropLive && line.source === 'live') { dropLive = false; ignoreId = incoming; held = [line]; return; }
        if (ignoreId !== null && incoming === ignoreId) return;
        newSession(line); return;
      }
      if (ignoreId !== null && incoming === ignoreId) {
        held.push(line);
        // the run's final status: it had finished on the server before Stop reached it (the status line says
        // Done), so the page shows it finished rather than stopped beside a "Done"
        if (line.t === 'status' && line.final) finishedAfterAll();
        return;
      }
      if (!S) return;
      const what = SV.ingest(S, line);
      if (what === 'run') buildLane(line.r);
      else if (what === 'end') fixSlots(line.r);
    }
    function finishedAfterAll() {
      const lines = held;
      held = []; ignoreId = null;
      if (S && S.id === incoming) S.state = 'live';   // (its lanes go on from where Stop froze them)
      for (const l of lines) ingest(l);
      follow = true; drawn = {};
      if (S) K = SV.total(S);
    }
    function onValue() {
      let v = props.value;
      if (typeof v !== 'string') v = v == null ? '' : String(v);
      const nl = v.indexOf('\n');
      const first = nl >= 0 ? v.slice(0, nl) : '';
      if (first !== head || v.length < consumed) { head = first; consumed = 0; }
      const end = v.lastIndexOf('\n') + 1;
      if (end <= consumed) return;
      const chunk = v.slice(consumed, end);
      consumed = end;
      for (const s of chunk.split('\n')) {
        if (!s) continue;
        try { ingest(JSON.parse(s)); } catch (err) { console.warn('spotviz: bad timeline line', err); }
      }
      if (!S) return;
      if (S.source === 'live') { if (follow) liveStep(); }
      else if (!S.opened) {
        S.opened = true;
        // (a visitor who asks for reduced motion gets the example at rest on its last pass: Play plays it)
        if (S.play && !matchMedia('(prefers-reduced-motion: reduce)').matches) { K = Math.min(1, SV.total(S)); startPlay(); }
        else if (S.play) K = restPass();
        else K = S.source === 'page' ? Math.min(1, SV.total(S)) : restPass();
      }
      schedule();
    }
    // Where a finished run rests: its end (the tree view then shows the last drafted pass).
    function restPass() { return SV.total(S); }

    // ------------------------------------------------------------------------------------ the timeline
    function schedule() {
      if (paintQueued) return;
      paintQueued = true;
      const gap = paintGap();
      const wait = Math.max(0, gap - (performance.now() - lastPaint));
      const go = () => requestAnimationFrame(() => { paintQueued = false; lastPaint = performance.now(); paint(); });
      if (S && S.state === 'live' && wait > 0) paintTimer = setTimeout(go, wait); else go();
    }
    function paintGap() { return Math.min(MAX_PAINT_GAP_MS, Math.max(MIN_PAINT_MS, PAINT_SHARE * cost)); }
    function setK(k, user) {
      const n = S ? SV.total(S) : 0;
      K = Math.max(0, Math.min(n, k));
      if (user) { follow = (K === n); if (!follow) { clearTimeout(liveTimer); liveTimer = null; } }
      schedule();
    }
    // A live run at a watchable pace: a step after each paint (at most one per LIVE_STEP_MS), of one pass, or of
    // more when showing the rest pass by pass would take over LIVE_WATCH_MS at the current paint spacing.
    let liveAwait = false, paintedK = -1;   // (paintedK: the pass the last paint() showed)
    function liveStep() {
      if (liveTimer || liveAwait || !S) return;
      liveTimer = setTimeout(liveTick, K === 0 ? 0 : LIVE_STEP_MS);
    }
    function liveTick() {
      liveTimer = null;
      if (!S || !follow || playing) return;
      const n = SV.total(S);
      if (K >= n) return;
      const gap = Math.max(LIVE_STEP_MS, paintGap());
      K = K === 0 ? 1 : Math.min(n, K + Math.max(1, Math.ceil((n - K) * gap / LIVE_WATCH_MS)));
      liveAwait = true;   // the next step comes after this one is painted
      schedule();
    }
    function livePainted() {
      if (!liveAwait) return;
      liveAwait = false;
      liveStep();
    }
    function speed() { return +speedSel.value || 1; }
    function stepDelay() {
      const R = SV.main(S);
      const trees = R && SV.drafted(R) && K < R.passes.length;
      const ms = (trees ? PLAY_TREE_MS : PLAY_TAIL_MS) / speed();
      root.dataset.stepMs = String(ms);
      return ms;
    }
    function startPlay() {
      if (!S || !SV.total(S)) return;
      if (K >= SV.total(S)) K = 0;
      clearTimeout(liveTimer); liveTimer = null;
      playing = true; follow = false; root.dataset.playing = '1'; playBtn.textContent = '❚❚ Pause';
      pausedBy = null;   // (a later pause is the visitor's own: the headline does not blame Stop for it)
      const tick = () => {
        if (!playing) return;
        if (K >= SV.total(S)) { stopPlay(); return; }
        setK(K + 1, false);
        playTimer = setTimeout(tick, stepDelay());
      };
      clearTimeout(playTimer);
      playTimer = setTimeout(tick, K === 0 ? 50 : stepDelay());
      schedule();
    }
    function stopPlay() {
      playing = false; clearTimeout(playTimer); playTimer = null;
      root.dataset.playing = '0'; playBtn.textContent = '▶ Play';
    }
    // A live run the slider follows (while it streams, and while it catches up after the run ended) moves on its
    // own: the button then says Pause, and pausing stops following (Play, or the last pass, picks it up again).
    function following() { return !!(S && S.source === 'live' && follow && !playing && K < SV.total(S)); }
    function togglePlay() {
      if (playing) stopPlay();
      else if (following()) { follow = false; clearTimeout(liveTimer); liveTimer = null; liveAwait = false; schedule(); }
      else startPlay();
    }
    playBtn.addEventListener('click', togglePlay);
    prevBtn.addEventListener('click', () => { stopPlay(); setK(K - 1, true); });
    nextBtn.addEventListener('click', () => { stopPlay(); setK(K + 1, true); });
    scrub.addEventListener('input', () => { stopPlay(); setK(+scrub.value, true); });
    function showGuide(on) {
      guide.hidden = !on;
      helpBtn.setAttribute('aria-expanded', on ? 'true' : 'false');
    }
    guide.querySelector('.sve-guide-close').addEventListener('click', () => { window.__svGuide = false; showGuide(false); helpBtn.focus(); });
    helpBtn.addEventListener('click', () => {
      window.__svGuide = guide.hidden; showGuide(window.__svGuide);
      // (on a phone the guide opens under the text panels, below the screen: a tap seemed to do nothing)
      if (window.__svGuide) {
        const r = guide.getBoundingClientRect();
        const still = matchMedia('(prefers-reduced-motion: reduce)').matches;
        if (r.top > window.innerHeight - 60 || r.bottom < 0) {
          guide.scrollIntoView({block: 'start', behavior: still ? 'auto' : 'smooth'});
        }
      }
    });
    if (!window.__svKeys) {   // one document listener for the page's lifetime (never one per update)
      window.__svKeys = true;
      // Keys act on the views only where they mean nothing else: never with a modifier (Alt+arrow is the browser's
      // Back, Ctrl+arrow moves by word), never in a field, on a control of the page outside the views, or in a box
      // that scrolls (the wide tree scrolls with the arrows); the space bar only inside the views (elsewhere it
      // scrolls the page), the arrows also with nothing focused; Home / End go to the first / last pass from
      // inside the views.
      document.addEventListener('keydown', (e) => {
        if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || e.defaultPrevented) return;
        const t = e.target, tag = t && t.tagName, view = t && t.closest && t.closest('.sve');
        const idle = !t || t === document.body || t === document.documentElement;
        if (!view && !idle) return;
        const scrubber = tag === 'INPUT' && t.classList.contains('sve-scrub');   // (its arrows are its own; Space plays)
        if ((tag === 'INPUT' && !(scrubber && e.key === ' ')) || tag === 'TEXTAREA' || tag === 'SELECT' ||
            (t && t.isContentEditable)) return;
        if (e.key === ' ' && (idle || tag === 'BUTTON' || tag === 'SUMMARY' || tag === 'A')) return;   // (their own)
        if ((e.key === 'Home' || e.key === 'End') && idle) return;   // (with nothing focused they scroll the page)
        if (t && t.closest && t.closest('.sve-plot-box')) return;   // (a scrolling box: its keys scroll it)
        if (window.__svKey) window.__svKey(e);
      });
      window.addEventListener('resize', () => { if (window.__svResize) window.__svResize(); });
      window.addEventListener('scroll', () => { if (window.__svFloat) window.__svFloat(); }, {passive: true});
    }
    window.__svKey = (e) => {
      if (e.key === 'ArrowLeft') { stopPlay(); setK(K - 1, true); e.preventDefault(); }
      else if (e.key === 'ArrowRight') { stopPlay(); setK(K + 1, true); e.preventDefault(); }
      else if (e.key === ' ' || e.code === 'Space') { togglePlay(); e.preventDefault(); }
      else if (e.key === 'Home') { stopPlay(); setK(+scrub.min, true); e.preventDefault(); }
      else if (e.key === 'End') { stopPlay(); setK(+scrub.max, true); e.preventDefault(); }
    };
    window.__svResize = () => { narrow(); drawn = {}; schedule(); };
    // narrow: one column (explainer.css), from the explainer's own width, which a tablet's column beside the
    // controls makes narrow in a wide window; its figures are drawn again at their new width
    function narrow() {
      const on = window.innerWidth <= 760 || root.clientWidth < 600;
      if (on === root.classList.contains('sve-narrow')) return false;
      root.classList.toggle('sve-narrow', on);
      return true;
    }
    narrow();
    // (the class changes the root's height: toggled in the next frame, not inside the observer's callback, which
    // would report a loop)
    if (window.ResizeObserver) {
      new ResizeObserver(() => requestAnimationFrame(() => { if (narrow()) { drawn = {}; schedule(); } })).observe(root);
    }
    // the bar's Stop (shown while a run is live) is the page's: the same event, the same handlers
    $('.sve-stop').addEventListener('click', () => {
      const b = document.querySelector('#sv-stop'), btn = b && (b.matches('button') ? b : b.querySelector('button'));
      playBtn.focus();   // (the bar's Stop goes once the run stops: focus stays in the bar)
      if (btn) btn.click();
    });
    // The scrubber stays on screen while the views below it are (on a phone the tree is far below it): when its
    // place scrolls off the top, it floats at the top of the window; a slot keeps its place in the layout.
    const bar = $('.sve-bar'), barSlot = document.createElement('div');
    barSlot.className = 'sve-bar-slot';
    bar.parentNode.insertBefore(barSlot, bar);
    window.__svFloat = () => {
      const top = barSlot.getBoundingClientRect().top, bottom = root.getBoundingClientRect().bottom;
      // (not on a short screen, a phone on its side: a floating bar of two lines would cover a fifth of it)
      const float = top < 0 && bottom > bar.offsetHeight + 60 && window.innerHeight >= 500;
      if (float === bar.classList.contains('sve-float')) {
        if (float && barSlot.style.height !== bar.offsetHeight + 'px') barSlot.style.height = bar.offsetHeight + 'px';
        return;
      }
      barSlot.style.height = float ? bar.offsetHeight + 'px' : '';
      if (float) { const r = root.getBoundingClientRect(); bar.style.left = r.left + 'px'; bar.style.width = r.width + 'px'; }
      else { bar.style.left = ''; bar.style.width = ''; }
      bar.classList.toggle('sve-float', float);
    };

    // ------------------------------------------------------------------------------------ lanes (token canvases)
    function lane(role) {
      if (lanes.has(role)) return lanes.get(role);
      const box = document.createElement('div');
      box.className = 'sve-run sve-waiting'; box.dataset.role = role;
      const h = document.createElement('div'); h.className = 'sve-head';
      const text = document.createElement('div'); text.className = 'sve-text';
      const foot = document.createElement('div'); foot.className = 'sve-foot';
      // (the token canvas is read to screen readers as one sentence of its own, not as hundreds of "·" spans)
      const sr = document.createElement('div'); sr.className = 'sve-sr';
      text.setAttribute('aria-hidden', 'true');
      box.appendChild(h); box.appendChild(sr); box.appendChild(text); box.appendChild(foot);
      lanesEl.appendChild(box);
      const L = {box: box, head: h, text: text, foot: foot, sr: sr, slots: [], shownK: 0, overlay: []};
      lanes.set(role, L);
      lanesEl.classList.toggle('sve-one', lanes.size === 1);
      lanesEl.classList.toggle('sve-two', lanes.size === 2);
      const R = SV.run(S, role);
      writeHead(R, L);
      text.textContent = 'waiting for its turn…';
      return L;
    }
    function writeHead(R, L) {
      const [who, how] = SV.runTitle(S, R);
      L.head.textContent = '';
      L.count = span('sve-count', ''); L.head.appendChild(L.count);
      const b = document.createElement('b'); b.textContent = who; b.style.color = R.meta ? SV.runColor(R.meta) : '';
      L.head.appendChild(b); L.head.appendChild(document.createTextNode(' — ' + how));
      L.head.title = who + ' — ' + how;
    }
    function buildLane(role) {
      const R = S.runs.get(role), m = R.meta, L = lane(role);
      L.box.classList.remove('sve-waiting');
      writeHead(R, L);
      L.text.textContent = '';
      const frag = document.createDocumentFragment();
      frag.appendChild(span('sve-prompt', m.prompt));
      L.slots = [];
      for (let i = 0; i < m.gen; i++) {
        const s = span('sve-s m g', MASKED);
        s.dataset.pos = String(m.start + i);
        frag.appendChild(s); L.slots.push(s);
      }
      L.text.appendChild(frag);
      L.shownK = 0; L.overlay = []; L.srAt = null;
      requestAnimationFrame(() => {   // a prompt longer than the box: its end in view above the slots to fill (the
        const first = L.slots[0], box = L.text;   // box opened on the prompt's beginning, the output below sight)
        if (!first || box.scrollHeight <= box.clientHeight) return;
        box.scrollTop = Math.max(0, first.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop - 60);
      });
    }
    function slotTip(pos, c) {
      return 'slot ' + pos + ' · ' + JSON.stringify(c.text) + ' · committed in pass ' + (c.k + 1) + ' · ' +
        (c.d ? 'drafted and accepted' : "the model's own decision") + ' · confidence ' + c.conf;
    }
    function fixSlots(role) {   // a finished run reserves each slot's final text: scrubbing never reflows
      const R = S.runs.get(role), L = lanes.get(role);
      if (!R.final || !L) return;
      L.slots.forEach((s, i) => {
        const f = R.final[i];
        if (f == null) { s.classList.add('g'); s.classList.toggle('gone', R.end != null && i >= R.end); return; }   // (never decoded: after the end of text)
        s.classList.remove('g');
        const c = R.cells.get(R.meta.start + i);
        s.textContent = f === '' ? '∅' : f;
        if (c) s.title = slotTip(R.meta.start + i, c);
        if (R.end != null && i >= R.end) s.classList.add('after');
      });
    }
    function setSlot(R, L, i, k) {   // slot i as it is after k passes
      const s = L.slots[i]; if (!s) return;
      const pos = R.meta.start + i, c = R.cells.get(pos);
      const on = c && c.k < k;
      if (on) {
        s.classList.remove('m', 'g');
        s.classList.toggle('d', !!c.d); s.classList.toggle('t', !c.d);
        if (!R.final) { s.textContent = c.text === '' ? '∅' : c.text; s.title = slotTip(pos, c); }
      } else {
        s.classList.remove('d', 't'); s.classList.add('m');
        if (!R.final) { s.classList.add('g'); s.textContent = MASKED; s.title = 'slot ' + pos + ': masked'; }
        else if (R.final[i] == null) s.classList.add('g');
      }
      s.classList.toggle('now', !!(c && c.k === k - 1));
    }
    function paintLane(role, k) {
      const R = S.runs.get(role), L = lanes.get(role);
      if (!R.meta || !L) return;
      const kk = Math.min(k, R.passes.length);
      const lo = Math.min(kk, L.shownK), hi = Math.max(kk, L.shownK);
      // slots whose state differs between L.shownK and kk: committed in passes [lo-1, hi) (the 'now' mark included)
      const touched = new Set();
      for (let p = Math.max(0, lo - 1); p < hi; p++) for (const c of R.passes[p].c) touched.add(c[0]);
      for (const pos of touched) setSlot(R, L, pos - R.meta.start, kk);
      L.shownK = kk;
      for (const s of L.overlay) s.classList.remove('x', 'st');
      L.overlay = [];
      if (role === SV.main(S).role && SV.drafted(R) && k < R.passes.length) {   // the next pass: expected, already right
        const nxt = R.passes[k];
        const mark = (pos, cls) => { const s = L.slots[pos - R.meta.start]; if (s && s.classList.contains('m')) { s.classList.add(cls); L.overlay.push(s); } };
        if (SV.hasTree(nxt)) for (const pos of nxt.tree.expect) mark(pos, 'x');
        if (R.why && R.why[k]) for (const pos of R.why[k]) mark(pos, 'st');
      }
      const n = SV.committedAt(R, kk);
      const finished = R.done && k >= R.passes.length;
      L.count.textContent = kk ? (finished ? '✓ ' : '') + 'pass ' + kk + (R.done ? ' / ' + R.passes.length : '')
        : 'before pass 1';   // (the scrubber's 0: the prompt alone)
      const rate = kk ? ' (' + (n / kk).toFixed(2) + ' per pass)' : '';
      if (finished && R.end != null) {
        L.foot.textContent = 'finished after ' + SV.plural(kk, 'target pass', 'target passes') + ': ' +
          (R.end >= R.meta.gen ? 'cut at the length limit (' + R.meta.gen + ' tokens) before the text ended; '
                               : SV.plural(R.end, 'token') + ' of text, then end-of-text; ') +
          n + ' slots committed' + rate;
      } else {
        // (up to: a run ends with the block where its text ends, often well before the length asked for)
        L.foot.textContent = kk ? n + ' of up to ' + R.meta.gen + ' slots committed after ' +
          SV.plural(kk, 'target pass', 'target passes') + rate : 'the prompt alone: up to ' + R.meta.gen +
          ' slots to fill (a run ends with the block where its text ends)';
      }
      if (L.srAt === L.foot.textContent) return;   // (the sentence follows the lane's pass, not every paint)
      L.srAt = L.foot.textContent;
      let drafted = 0, own = 0, said = '', gap = false;
      for (const sl of L.slots) {   // (a run of masked slots between committed ones reads as "…")
        if (sl.classList.contains('d')) drafted++; else if (sl.classList.contains('t')) own++;
        else { gap = said !== ''; continue; }
        if (gap) { said += ' … '; gap = false; }
        said += sl.textContent;
      }
      L.sr.textContent = SV.runTitle(S, R)[0] + (kk ? ', after pass ' + kk : ', before pass 1') + ': ' +
        L.foot.textContent + '; ' + SV.plural(drafted, 'slot') + ' drafted and accepted, ' +
        own + ' decided by the model itself. Text so far: ' +
        said.replace(/∎+/g, ' (end of text) ');
    }
    function highlight(slots, on) {
      const R = SV.main(S), L = R && lanes.get(R.role);
      if (!L) return;
      for (const pos of slots) { const s = L.slots[pos - R.meta.start]; if (s) s.classList.toggle('hl', on); }
    }

    // ------------------------------------------------------------------------------------ figures
    let lit = [];
    // The tree's hover text is the page's own tooltip, not Plotly's: Plotly places its label inside the figure, and
    // a tree wider than its box scrolls, so a label by a node near the box's edge was cut off by the box. A mouse
    // shows it by hovering, a finger by tapping (a touch screen sends Plotly's click, never its hover); it goes with
    // the next press anywhere (the tap on another node then shows that node's) and when the page or the box scrolls.
    const tip = document.createElement('div');
    tip.className = 'sve-tip'; tip.setAttribute('role', 'tooltip'); tip.hidden = true;
    root.appendChild(tip);
    let tipTree = '';   // the tree the tip was shown on (run and pass: while an example plays on, its tree stays)
    const treeKey = () => { const R = SV.main(S); return R ? S.id + ':' + SV.treePass(R, K).k : ''; };
    let pinned = false;   // shown by a click or tap: it stays when the pointer leaves the node (a touch screen's
    // emulated mouse leaves it at once), until the next press or scroll
    window.__svTipOff = () => { pinned = false; if (!tip.hidden) { tip.hidden = true; highlight(lit, false); lit = []; } };
    if (!window.__svTips) {   // (document listeners once for the page's lifetime; they call this explainer's)
      window.__svTips = true;
      document.addEventListener('pointerdown', (e) => {
        window.__svPointer = e.pointerType;   // (a finger's tip goes above the finger: showTip)
        window.__svPressAt = performance.now();
        if (window.__svTipOff) window.__svTipOff();
      }, true);
      // (a scroll that a tap itself causes, the browser bringing what it focused into view, keeps the tip it shows)
      document.addEventListener('scroll', () => {
        if (window.__svTipOff && performance.now() - (window.__svPressAt || -1e9) > 500) window.__svTipOff();
      }, {capture: true, passive: true});
    }
    function showTip(text, ev) {
      if (!text || !ev || ev.clientX == null) { tip.hidden = true; return; }
      tip.textContent = text; tip.hidden = false;
      const pad = 8, w = tip.offsetWidth, h = tip.offsetHeight;
      let x = ev.clientX + 14, y = ev.clientY + 14;
      if (x + w > window.innerWidth - pad) x = Math.max(pad, ev.clientX - 14 - w);
      const above = ev.clientY - 24 - h;   // (a finger covers what is below it: its tip goes above when there is room)
      if (window.__svPointer === 'touch' && above >= pad) y = above;
      else if (y + h > window.innerHeight - pad) y = Math.max(pad, ev.clientY - 14 - h);
      tip.style.left = x + 'px'; tip.style.top = y + 'px';
    }
    // where the lit slots are off the screen (the lanes are above the tree), the tip quotes the node's own slots
    // (`own`: its decision, the last of the lit path) in their lane's text
    function litContext(slots, own) {
      const R = SV.main(S), L = R && lanes.get(R.role);
      const at = (pos) => L.slots[pos - R.meta.start];
      if (!L || !slots || !slots.length || !at(slots[0])) return '';
      const r = at(slots[0]).getBoundingClientRect();
      if (r.bottom > 0 && r.top < window.innerHeight) return '';
      if (!own || !own.length) return '';
      const lo = Math.min(...own), hi = Math.max(...own);
      let text = '', open = false;   // (a run of slots in one pair of brackets: "[48 +]", not "[4][8][ +]")
      for (let pos = Math.max(R.meta.start, lo - 8); pos <= hi + 8; pos++) {
        const sl = at(pos);
        if (!sl) break;
        const mine = own.includes(pos);
        if (mine !== open) { text += mine ? '[' : ']'; open = mine; }
        text += sl.textContent.replace(/\n/g, '↵');   // (a new line as the tree's labels show it)
      }
      if (open) text += ']';
      return ' · ' + (own.length > 1 ? 'its slots' : 'its slot') + ' in the ' + SV.runTitle(S, R)[0] +
        ' lane above, in brackets: …' + text.replace(/\s+/g, ' ') + '…';
    }
    function hookTree(div) {   // hovering a tree node highlights its slots on the canvas (once per div)
      if (div.__svHooked || !div.on) return;
      div.__svHooked = true;
      const onNode = (ev) => {
        highlight(lit, false); lit = [];
        const pt = ev.points && ev.points[0];
        const tp = SV.treePass(SV.main(S), K);
        if (!pt || !tp.p || !tp.p.tree) { showTip(null); return; }
        let text = null, own = [];
        if (pt.customdata === 'bonus') { lit = own = tp.p.tree.bonus[2]; text = tp.p.tree.bonus[1]; }
        else {
          const nodes = tp.p.tree.nodes, n = nodes.find((x) => x[0] === pt.customdata);
          if (n) {
            lit = n[7]; text = n[5] + (n[0] === tp.p.tree.stop ? ' · the walk stopped here' : '');
            const up = nodes.find((x) => x[0] === n[1]);   // (its parent: the path's slots before this node's own)
            own = up ? n[7].slice(up[7].length) : n[7];
          }
        }
        highlight(lit, true);
        showTip(text && text + litContext(lit, own), ev.event);
        tipTree = treeKey();
      };
      div.on('plotly_hover', (ev) => { pinned = false; onNode(ev); });
      div.on('plotly_click', (ev) => {   // (a tap: touch screens send no hover)
        if (playing) stopPlay();   // (a tapped node is being read: the playing example waits on its tree)
        onNode(ev); pinned = !tip.hidden;
      });
      div.on('plotly_unhover', () => { if (!pinned) { highlight(lit, false); lit = []; showTip(null); } });
    }
    // Figures are drawn one per animation frame (the tree first), each at the scrubber's position when its turn
    // comes: no single task draws them all. `cost` keeps the script time of the last full round, which spaces
    // the paints of a live run (at most about a fifth of the time goes to painting).
    let figQueue = [], figBusy = false, cost = 0;
    const figCost = {};   // script ms of each figure's last draw; cost = their sum (one paint of every view)
    function paintFigures() {
      if (!window.Plotly) return;
      const R = SV.main(S), drafted = SV.drafted(R);
      $('.sve-tree-panel').hidden = !drafted;
      $('.sve-depth-panel').hidden = !drafted;
      root.classList.toggle('sve-plain', !!(R && R.meta) && !drafted);   // (the standard decoder alone: no drafter keys)
      const of = S.order.length > 2 && R && R.meta ? '(' + SV.runTitle(S, R)[0] + ' lane)' : '';   // a race: whose views
      for (const e of root.querySelectorAll('.sve-of')) e.textContent = of;
      whyEl.textContent = drafted ? why(R, K) : '';
      figQueue = VIEWS.map(([name]) => name).filter((name) => !plots[name].closest('.sve-panel').hidden);
      if (!figBusy) { figBusy = true; requestAnimationFrame(nextFigure); }
    }
    function nextFigure() {
      const name = figQueue.shift();
      if (!name && S) {   // the scrubber may have moved while the round ran: redraw what shows another pass
        const stale = VIEWS.map(([n]) => n).filter((n) => !plots[n].closest('.sve-panel').hidden
                                                       && drawn[n] !== figKey(n, K));
        if (stale.length) { figQueue = stale; requestAnimationFrame(nextFigure); return; }
      }
      if (!name || !S) {
        figBusy = false;
        root.dataset.drawn = S ? S.id + ':' + K : '';
        // (a live step counts as shown once paint() has shown its pass: a round of figures that ends between a
        // step and its paint drew the new pass's figures, but not its headline and counters; a pass stepped
        // on from there would be skipped by them on a slow machine)
        if (paintedK === K) livePainted();
        return;
      }
      const t0 = performance.now();
      if (drawFigure(name, K)) {
        figCost[name] = performance.now() - t0;
        cost = Object.values(figCost).reduce((a, b) => a + b, 0);
      }
      requestAnimationFrame(nextFigure);
    }
    function roomFor(div) {   // the width a figure may take: its panel's content box (without the panel's padding,
      // the figures ran 16 px past their panels and cut the last column of the commit order)
      const box = div.parentNode, cs = getComputedStyle(box);
      const inner = box.clientWidth - (parseFloat(cs.paddingLeft) || 0) - (parseFloat(cs.paddingRight) || 0);
      return Math.max(200, Math.floor(inner || 300));
    }
    function figKey(name, k) {   // what a figure shows: run, its version, the pass and the width drawn at
      const width = roomFor(plots[name]);
      return S.id + ':' + S.version + ':' + k + ':' + width;
    }
    function drawFigure(name, k) {
      const div = plots[name];
      const width = roomFor(div);
      const want = figKey(name, k);
      if (drawn[name] === want) return false;
      drawn[name] = want;
      const fig = VIEWS.find((v) => v[0] === name)[1](S, k, {width: width, height: HEIGHTS[name]});
      const drawnFig = window.Plotly.react(div, fig.data, fig.layout, SV.PLOT_CONFIG);
      // (role="img": the figure read as one picture, named by its heading, the pass and what its lines are)
      const heading = div.closest('.sve-panel').querySelector('.sve-h');
      const names = [...new Set((fig.data || []).filter((t) => t.name && t.showlegend !== false).map((t) => t.name))];
      div.setAttribute('aria-label', (heading ? heading.textContent : name) + ', up to pass ' + k +
                       (fig.caption ? ': ' + fig.caption : names.length ? ': ' + names.join('; ') : ''));
      if (name === 'tree') {
        const box = div.parentNode;   // (a wide tree scrolls: keep where its walk stopped in view, once drawn)
        if (!box.dataset.edges) { box.dataset.edges = '1'; box.addEventListener('scroll', () => edges(box), {passive: true}); }
        Promise.resolve(drawnFig).then(() => {
          edges(box);
          if (fig.focus == null || box.scrollWidth <= box.clientWidth + 1) return;
          const seen = (left) => fig.focus >= left + 40 && fig.focus <= left + box.clientWidth - 60;
          const max = box.scrollWidth - box.clientWidth;
          if (!seen(box.scrollLeft)) {   // (the star near the right edge: the most of the accepted path before it in view)
            box.scrollLeft = fig.snap(Math.max(0, fig.focus - box.clientWidth + 90), max, box.clientWidth);
          } else {   // (in view where an earlier tree left the scroll: at a column's start, no label cut at the edge)
            const at = fig.snap(box.scrollLeft, max, box.clientWidth);
            if (Math.abs(at - box.scrollLeft) > 1 && seen(at)) box.scrollLeft = at;
          }
        });
        treeCap.textContent = fig.caption ? '— ' + fig.caption : '';
        root.dataset.treePass = String(fig.shown);
        hookTree(div);
      }
      return true;
    }
    // A tree wider than its box fades out at an edge it goes on past (a label cut at the right edge reads as "scroll
    // for more", not as a drawing error; on the left, the start scrolled out of view is hinted); none at its ends.
    function edges(box) {
      const max = box.scrollWidth - box.clientWidth;
      box.classList.toggle('sve-more-right', max > 8 && box.scrollLeft < max - 8);   // (a snap stops up to 6 px short)
      box.classList.toggle('sve-more-left', max > 8 && box.scrollLeft > 8);
    }
    function why(R, k) {
      const out = [];
      const tp = SV.treePass(R, k);
      if (SV.hasTree(tp.p)) out.push('Pass ' + tp.k + ' accepted ' + SV.plural(tp.p.tree.depth, R.meta.mode === 'threshold' ? 'drafted set' : 'drafted decision') + ' (dark bars).');
      const nxt = k < R.passes.length ? R.passes[k] : null;
      if (SV.hasTree(nxt)) {
        const right = R.why && R.why[k] ? R.why[k].length : null;
        out.push('Next pass: the drafter expects ' + SV.plural(nxt.tree.expect.length, 'slot') + ' (dashed)' + (right === null ? '.'
          : right ? '; ' + SV.plural(right, 'slot') + ' still masked already ' + (right === 1 ? 'holds its' : 'hold their') + ' final token in the previous pass\'s predictions (purple) — that is why guessing works.'
          : '; none of its drafts holds a final token yet.'));
      }
      return out.join(' ');
    }

    // ------------------------------------------------------------------------------------ headline, table
    function kpi(big, small, tone) {
      const d = document.createElement('div'); d.className = 'sve-kpi';
      // (non-breaking hyphens: "training-free" broke across lines on a phone)
      const b = document.createElement('b'); b.textContent = big.replace(/-/g, '\u2011'); b.className = 'sve-' + (tone || 'plain');
      const s = document.createElement('span'); s.textContent = small;
      d.appendChild(b); d.appendChild(s); return d;
    }
    // A run's figures (and its status line) arrive at its end: from Run until then, the headline, its note and the
    // status line keep at least the height they had, so the views under them do not jump when the figures appear
    // (nor when the previous run's go). A run stopped before its end has no figures: the room stays while it is
    // shown (saying why it is empty), as the views would otherwise jump up; another run shown gives it back.
    let heldBoxes = [], settledFor = null;
    function holdHeights() {
      releaseHeights();
      for (const el of [headEl, noteEl, document.querySelector('#sv-status')]) {
        if (!el || !el.offsetHeight) continue;
        el.style.minHeight = el.offsetHeight + 'px'; el.classList.add('sve-held', 'sve-room'); heldBoxes.push(el);
      }
    }
    function releaseHeights() {
      for (const el of heldBoxes) { el.style.minHeight = ''; el.classList.remove('sve-held', 'sve-room'); }
      headEl.classList.remove('sve-settled');   // (never left for the next run's room)
      heldBoxes = []; settledFor = null;
    }
    function paintHeadline() {
      headEl.textContent = ''; noteEl.textContent = '';
      if (heldBoxes.length && settledFor !== null && !(S && S.id === settledFor)) releaseHeights();
      else if (heldBoxes.length && settledFor === null && root.dataset.state !== 'starting' && !(S && S.state === 'live')
               && !following()) {
        if (S && S.state === 'stopped' && !(S.sum && S.sum.kpis)) {   // (stopped: the room stays)
          settledFor = S.id;
          if (heldBoxes.includes(headEl)) headEl.classList.add('sve-settled');
          // (the note has nothing to say for a stopped run: its room goes to the headline's dimmed totals, which
          // on a phone are longer than the figures they stand for; no blank under them, and the views stay put)
          if (heldBoxes.includes(noteEl) && heldBoxes.includes(headEl)) {
            headEl.style.minHeight = (parseFloat(headEl.style.minHeight) || 0) + noteEl.offsetHeight + 'px';
            noteEl.style.minHeight = ''; noteEl.classList.remove('sve-held', 'sve-room');
            heldBoxes = heldBoxes.filter((el) => el !== noteEl);
          }
        } else releaseHeights();
      }
      const sum = S.sum;
      // (the figures only once the views show the end: on a phone they would push the views down mid-animation)
      if (sum && sum.kpis && !following() && (S.state !== 'live' || !follow || K >= SV.total(S))) {
        for (const x of sum.kpis) headEl.appendChild(kpi(x.big, x.small, x.tone));
        noteEl.textContent = sum.note || '';
        if (K >= SV.total(S)) pausedBy = null;   // (seen to its end: what comes later is the visitor's own scrubbing)
        if (pausedBy === S.id && !playing && K < SV.total(S)) {   // (Stop came after the run's end: nothing to stop)
          headEl.appendChild(kpi('Paused at pass ' + K + ' of ' + SV.total(S), 'the run had already ended when Stop ' +
                                 'came, so nothing was cut short: ▶ Play shows the rest', 'plain'));
        }
      } else if (SV.total(S)) {
        const bits = [];
        for (const role of S.order) {
          const R = S.runs.get(role);
          if (!R.meta) continue;
          const n = SV.plural(R.passes.length, 'pass', 'passes');
          bits.push(SV.runTitle(S, R)[0] + ' ' + (R.done ? 'finished in ' + n
            : S.state === 'live' ? n + ' so far' : 'stopped after ' + n + ', ' + SV.committedAt(R, R.passes.length) +
              ' of ' + R.meta.gen + ' slots filled'));
        }
        headEl.appendChild(kpi(S.state === 'live' ? 'Decoding…' : S.state === 'stopped' ? 'Stopped' : 'Passes',
                               bits.join(' · '), 'plain'));
        if (heldBoxes.length && settledFor !== null) {   // (a stopped run: its room says what a run that ends brings)
          for (const [big, small] of [['— target passes saved', 'counted when a run reaches its end'],
                                      ['— wall-clock', 'timed against the standard decoder when both end'],
                                      ['— identical output', 'checked token by token when both end']]) {
            const line = kpi(big, small, 'dim'); line.style.flexBasis = '100%'; headEl.appendChild(line);   // (a line each)
          }
        } else if (heldBoxes.length) {   // (the room held for the figures: say what comes there)
          const hint = document.createElement('div'); hint.className = 'sve-hold-hint';
          // (a run decoded faster than its views replay it: the status already says Done, so this says why the
          // figures wait)
          const decoded = S.order.every((role) => { const R = S.runs.get(role); return R.meta && R.done; });
          // (the status line already has the totals then: the page must not say they are still to come)
          hint.textContent = decoded ? 'Decoded: the status line above has its totals. The views replay it pass by ' +
            'pass; the headline figures come here at its end (or drag the pass slider there).'
            : 'The passes saved, the wall-clock and the identity check come here once the views reach the run\'s end.';
          headEl.appendChild(hint);
        }
      }
    }
    function row(name, help, vals) {
      const tr = document.createElement('tr'), td = document.createElement('td');
      td.textContent = name;
      if (help) { td.appendChild(document.createElement('br')); const s = document.createElement('small'); s.textContent = help; td.appendChild(s); }
      tr.appendChild(td);
      for (const v of vals) { const c = document.createElement('td'); c.textContent = v; tr.appendChild(c); }
      return tr;
    }
    function paintTable() {
      const runs = S.order.map((r) => S.runs.get(r)).filter((R) => R.counters);
      const key = S.id + ':' + runs.length;
      if (tableFor === key) return;
      tableFor = key;
      tableEl.textContent = '';
      if (!runs.length) return;
      const t = document.createElement('table'), hd = document.createElement('tr');
      hd.appendChild(document.createElement('th'));
      for (const R of runs) { const th = document.createElement('th'); th.textContent = SV.runTitle(S, R)[0]; hd.appendChild(th); }
      t.appendChild(hd);
      const v = (f) => runs.map((R) => f(R.counters));
      t.appendChild(row('target passes (NFE)', 'calls of the diffusion model; NFE = number of function evaluations, the cost measure of the SPOT paper', v((c) => c.passes)));
      t.appendChild(row('slots committed', 'every filled slot, also those after the end-of-text token', v((c) => c.commits)));
      t.appendChild(row('tokens of text', 'the output up to the end-of-text token', v((c) => c.tokens)));
      t.appendChild(row('commits per pass', 'slots filled per call of the model (the mean accepted length): 1 for the standard decoder in exact mode', v((c) => (c.passes ? c.commits / c.passes : c.mal).toFixed(2))));   // (as the lanes count it)
      t.appendChild(row('states checked', 'states the model computed, over all passes: each pass\'s start and drafted states less its known states, its tree at once (the standard decoder one state a pass)', v((c) => c.checked == null ? '-' : c.checked)));
      t.appendChild(row('drafted states', 'every tree node but each pass\'s start, over all passes (known states included)', v((c) => c.drafted)));
      t.appendChild(row('known states', 'tree nodes (a pass\'s start among them) an earlier pass had already computed: decided from its output, not checked again (hollow in the tree)', v((c) => c.reused || 0)));
      t.appendChild(row('drafted slots accepted', 'slots filled by a drafted guess that equalled the model\'s own decision (in threshold mode one decision fills a set of slots)', v((c) => c.accepted)));
      if (runs.some((R) => R.counters.ends && Object.keys(R.counters.ends).length)) {
        const ENDS = {window: 'window done', budget: 'tree too small', position: 'no guess for that slot', token: 'wrong token', end: 'text finished'};
        t.appendChild(row('why acceptance stopped', 'per checked tree, where the model stopped following the drafted guesses: window done = it finished the block of slots being decoded and the tree held no guess past it; tree too small = its decision was a guess the budget had no room for; no guess for that slot; wrong token = the right slot with another token; text finished',
          v((c) => Object.entries(c.ends || {}).map(([k, n]) => (ENDS[k] || k) + ' ' + n).join(' · ') || '-')));
      }
      t.appendChild(row('wall-clock (s)', null, v((c) => c.wall.toFixed(3))));
      t.appendChild(row('tokens per second', 'where the run was timed: this machine for a live run, the recording machine for an example or a replay (the wall-clock line above says what the hardware allows)', v((c) => c.tps.toFixed(1))));
      tableEl.appendChild(t);
    }

    // ------------------------------------------------------------------------------------ paint
    function paint() {
      if (!S) return;
      const n = SV.total(S);
      if (K > n) K = n;
      scrub.max = String(n); scrub.value = String(K);
      posEl.textContent = K ? 'pass ' + K + ' / ' + n : 'before pass 1' + (n ? ' / ' + n : '');
      scrub.setAttribute('aria-valuetext', K ? 'pass ' + K + ' of ' + n : n ? 'before the first of ' + n + ' passes'
                                                                           : 'before the first pass');
      prevBtn.disabled = K <= 0; nextBtn.disabled = K >= n; playBtn.disabled = !n;
      if (!playing) playBtn.textContent = following() ? '❚❚ Pause' : '▶ Play';
      for (const role of S.order) paintLane(role, K);
      if (!tip.hidden && treeKey() !== tipTree) window.__svTipOff();   // (a node's text and lit slots: its tree's)
      paintFigures();
      paintHeadline();
      if (S.state !== 'live') paintTable();
      // (the bar's Stop comes and goes with the state: a floating bar's slot keeps its height; read only then, not
      // at every paint of a streaming run)
      if (root.dataset.state !== S.state) { root.dataset.state = S.state; window.__svFloat(); }
      root.dataset.pass = String(K); root.dataset.npasses = String(n); paintedK = K;
      root.dataset.renders = String((+root.dataset.renders || 0) + 1);
    }

    // ------------------------------------------------------------------------------------ run / stop (the app)
    let before = 'idle';   // the state to go back to if the run is refused before it starts
    window.__svStart = () => {
      stopPlay();
      before = S ? S.state : 'idle';
      dropLive = false;
      held = [];
      if (S) { ignoreId = null; S.state = 'starting'; S.status = null; }
      root.dataset.state = 'starting';
      window.__svFloat();   // (the bar's Stop appears)
      holdHeights();
      setStatus('Starting… (a model\'s first run also loads it)', 'info');
      // "Cannot run: ..." (bad input, no model) arrives without a timeline: keep the views as they were. (Polled
      // while starting: Gradio may replace the status element, which an observer would not follow.)
      clearInterval(window.__svRefused);
      window.__svRefused = setInterval(() => {
        if (root.dataset.state !== 'starting') { clearInterval(window.__svRefused); return; }
        const st = document.querySelector('#sv-status');
        if (st && st.innerText.trim().startsWith('Cannot run')) {
          clearInterval(window.__svRefused);
          if (S && S.state === 'starting') S.state = before;
          root.dataset.state = S ? S.state : before;
          releaseHeights();
        }
      }, 150);
    };
    // Stop: a live run ends where it is; a playing example or replay pauses where it is; a finished run (its
    // "Done … identical") is left as it is.
    window.__svStop = () => {
      if (root.dataset.state === 'starting' && !(S && S.source === 'live' && S.state === 'live')) {
        // no line of the run has arrived: the views keep the previous run, and the run's lines still on their way
        // are dropped
        dropLive = true; held = [];
        if (S) S.state = before;
        root.dataset.state = 'stopped';
        releaseHeights();
        setStatus('Stopped before its first pass arrived: the views still show the previous run. Press Run to start again.', 'info');
        return;
      }
      if (following()) {   // the views are following the run (or catching up with it): they stop moving
        follow = false; clearTimeout(liveTimer); liveTimer = null; liveAwait = false;
        // a run that ended on the server pauses where the views are, as Pause does (its status stays; Play goes
        // on); a live run ends below, on the last pass that arrived
        if (S.state !== 'live') { pausedBy = S.id; schedule(); return; }
        K = SV.total(S); schedule();
      }
      if (S && S.source !== 'live') { stopPlay(); return; }   // (an example, a replay: what moves is its playback)
      if (!S || S.state !== 'live') return;
      // every run already finished (the server's last lines, the headline among them, are still on their way):
      // nothing is left to stop, and the run ends as finished ("Stopped" beside a "Done" status read as a contradiction)
      if (S.order.every((r) => { const X = S.runs.get(r); return X.meta && X.done; })) return;
      stopPlay();
      ignoreId = S.id; held = [];   // lines still on their way are dropped: the page ends in the state shown now
      // (unless they end in the run's final status: finishedAfterAll)
      S.state = 'stopped';
      clearTimeout(liveTimer); liveTimer = null;
      const bits = S.order.map((r) => S.runs.get(r)).filter((R) => R.meta && !R.done);
      const R = bits[0] || SV.main(S);
      const unrun = S.order.map((r) => S.runs.get(r)).filter((X) => !X.meta);
      for (const X of unrun) { const L = lanes.get(X.role); if (L) { writeHead(X, L); L.text.textContent = 'not run: Stop came before its turn'; } }
      const named = (X) => SV.runTitle(S, X)[0].replace(/^Standard decoder$/, 'standard decoder');   // (mid-sentence)
      const text = (R.passes.length ? 'Stopped after pass ' + R.passes.length + ' of the ' : 'Stopped before the first pass of the ') +
        named(R) + ' run' +
        (unrun.length ? ' (' + unrun.map((X) => named(X).replace(/^standard decoder$/, 'the standard decoder')).join(', ') +
          ': not run)' : '') +
        '. Press Run to start again.';   // (short: a line more in the status moved the views on a phone; the headline says the rest)
      clearTimeout(paintTimer); paintQueued = false;
      follow = true; K = SV.total(S); drawn = {}; paint(); setStatus(text, 'info');
    };
    window.__svRunning = () => !!(S && S.state === 'live');
    if (watch) watch('value', onValue);
    onValue();
    root.dataset.ready = '1';
  };
})();
