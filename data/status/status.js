/* The status page's charts and decision history. The table above them is
 * rendered by the daemon; this script polls the same read-only JSON the
 * admin API serves (under /status/api/v1/) and redraws in place. It keeps
 * what it has seen of each group's decisions for CHART_MS, so a page left
 * open shows more than the daemon's last 100 records. */
(function () {
	'use strict';
	var API = '/status/api/v1/groups', POLL_MS = 5000, CHART_MS = 6 * 3600 * 1000;
	var MAX_POINTS = 4000, MAX_GROUPS = 12, MAX_ROWS = 200, NS = 'http://www.w3.org/2000/svg';
	var seen = {}, order = [], timer = null;

	function $(id) { return document.getElementById(id); }
	function el(tag, attrs, text) {
		var e = tag.indexOf('svg:') === 0 ? document.createElementNS(NS, tag.slice(4)) : document.createElement(tag);
		for (var k in attrs) if (attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
		if (text !== undefined && text !== null) e.textContent = String(text);
		return e;
	}
	function get(url) {
		return fetch(url, { cache: 'no-store' }).then(function (r) {
			if (!r.ok) throw new Error(url + ': HTTP ' + r.status);
			return r.json();
		});
	}
	function num(v) { return typeof v === 'number' && isFinite(v) ? v : null; }
	function show(v) { return v === null || v === undefined ? '\u2013' : String(v); }
	function hhmm(t) {
		var d = new Date(t);
		return ('0' + d.getHours()).slice(-2) + ':' + ('0' + d.getMinutes()).slice(-2);
	}

	/* Merges a group's records into what was seen, by time, and forgets
	 * what is older than the chart's window. */
	function remember(name, decisions) {
		var s = seen[name] || (seen[name] = []), last = s.length ? s[s.length - 1].t : -Infinity;
		decisions.forEach(function (d) {
			var t = Date.parse(d.time);
			if (isFinite(t) && t > last) { d.t = t; s.push(d); last = t; }
		});
		var from = last - CHART_MS, cut = 0;
		while (cut < s.length && s[cut].t < from) cut++;
		if (s.length - cut > MAX_POINTS) cut = s.length - MAX_POINTS;
		if (cut) s.splice(0, cut);
		return s;
	}

	function row(g) {
		var d = g.last_decision || {}, tr = el('tr', { 'data-group': g.name }), name = el('td', { 'data-label': 'Group' }, g.name);
		if (g.paused) name.appendChild(el('span', { class: 'badge' }, 'paused'));
		if (g.pinned !== null && g.pinned !== undefined) name.appendChild(el('span', { class: 'badge' }, 'pinned ' + g.pinned));
		if (g.dry_run) name.appendChild(el('span', { class: 'badge' }, 'dry run'));
		tr.appendChild(name);
		[['Current', g.current], ['Desired', g.desired], ['Min', g.min], ['Max', g.max]].forEach(function (c) {
			tr.appendChild(el('td', { 'data-label': c[0], class: 'n' }, show(c[1])));
		});
		tr.appendChild(el('td', { 'data-label': 'Profile' }, show(g.profile)));
		tr.appendChild(el('td', { 'data-label': 'Hold' }, show(d.hold)));
		tr.appendChild(el('td', { 'data-label': 'Last decision', class: d.action || undefined }, show(g.explanation)));
		return tr;
	}

	/* One chart: a polyline per series (broken where a value is missing),
	 * a triangle per action, the time and value range on the axes. */
	function chart(title, recs, series, marks) {
		var W = 600, H = 170, L = 44, R = 8, T = 8, B = 22, lo = Infinity, hi = -Infinity;
		var t0 = recs.length ? recs[0].t : 0, t1 = recs.length ? recs[recs.length - 1].t : 1;
		if (t1 <= t0) t1 = t0 + 1000;
		series.forEach(function (s) {
			recs.forEach(function (r) { var v = s.get(r); if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
		});
		if (lo === Infinity) { lo = 0; hi = 1; }
		lo = Math.min(lo, 0);
		if (hi <= lo) hi = lo + 1;
		hi += (hi - lo) * 0.08;
		function x(t) { return (L + (t - t0) / (t1 - t0) * (W - L - R)).toFixed(1); }
		function y(v) { return (T + (hi - v) / (hi - lo) * (H - T - B)).toFixed(1); }
		var fig = el('figure', { 'data-chart': title }), svg = el('svg:svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': title });
		fig.appendChild(el('figcaption', {}, title));
		[lo, (lo + hi) / 2, hi].forEach(function (v) {
			svg.appendChild(el('svg:line', { class: 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v) }));
			svg.appendChild(el('svg:text', { x: L - 4, y: +y(v) + 4, 'text-anchor': 'end' }, +v.toPrecision(3)));
		});
		svg.appendChild(el('svg:text', { x: L, y: H - 6 }, recs.length ? hhmm(t0) : 'no decisions yet'));
		if (recs.length) svg.appendChild(el('svg:text', { x: W - R, y: H - 6, 'text-anchor': 'end' }, hhmm(t1)));
		series.forEach(function (s) {
			var run = [], n = 0, py = null;
			function flush() {
				if (run.length) svg.appendChild(el('svg:polyline', { class: s.cls, points: run.join(' '), 'data-points': s.step ? (run.length + 1) >> 1 : run.length }));
				run = [];
			}
			recs.forEach(function (r) {
				var v = s.get(r);
				if (v === null) { flush(); py = null; return; }
				/* Counts hold until the next record: drawn as steps. */
				if (s.step && py !== null && run.length) run.push(x(r.t) + ',' + py);
				py = y(v);
				run.push(x(r.t) + ',' + py); n++;
			});
			flush();
			s.n = n;
		});
		if (marks) recs.forEach(function (r) {
			if (r.action !== 'scale_out' && r.action !== 'scale_in') return;
			var px = +x(r.t), py = +y(num(r.desired) === null ? lo : r.desired), up = r.action === 'scale_out' ? -1 : 1;
			var p = el('svg:path', { class: 'action ' + r.action, d: 'M' + px + ' ' + py + 'l-6 ' + (-9 * up) + 'h12z' });
			p.appendChild(el('svg:title', {}, r.time + ': ' + r.explanation));
			svg.appendChild(p);
		});
		fig.appendChild(svg);
		var legend = el('p', { class: 'legend' });
		series.forEach(function (s) {
			var sp = el('span'); sp.appendChild(el('i', { class: 'k-' + s.cls })); sp.appendChild(document.createTextNode(s.label));
			legend.appendChild(sp);
		});
		if (marks) legend.appendChild(el('span', {}, '\u25b2 scale-out \u25bc scale-in'));
		fig.appendChild(legend);
		return fig;
	}

	function charts(name, recs) {
		var box = el('div', { class: 'group-charts', 'data-group': name }), names = [];
		box.appendChild(chart(name + ': capacity', recs, [
			{ cls: 'current', label: 'current', step: true, get: function (r) { return num(r.current); } },
			{ cls: 'desired', label: 'desired', step: true, get: function (r) { return num(r.desired); } },
			{ cls: 'ready', label: 'ready', step: true, get: function (r) { return num(r.ready); } }
		], true));
		recs.forEach(function (r) { (r.signals || []).forEach(function (s) { if (names.indexOf(s.name) < 0) names.push(s.name); }); });
		names.forEach(function (sn) {
			function sig(r) { var a = r.signals || []; for (var i = 0; i < a.length; i++) if (a[i].name === sn) return a[i]; return null; }
			/* An average signal is the group's total against a target per
			 * instance: what the current instances carry at target is the
			 * line to compare it with. */
			var last = sig(recs[recs.length - 1]) || {}, avg = last.type === 'average';
			box.appendChild(chart(name + ': ' + sn, recs, [
				{ cls: 'value', label: sn, get: function (r) { var s = sig(r); return s && s.valid ? num(s.value) : null; } },
				{ cls: 'target', label: avg ? 'target \u00d7 current' : 'target', get: function (r) {
					var s = sig(r), t = s ? num(s.target) : null;
					return t === null || !avg ? t : num(r.current) === null ? null : t * r.current;
				} }
			], false));
		});
		return box;
	}

	function options(sel, values) {
		var keep = sel.value;
		while (sel.options.length > 1) sel.remove(1);
		values.forEach(function (v) { sel.appendChild(el('option', { value: v }, v)); });
		sel.value = values.indexOf(keep) >= 0 ? keep : '';
	}

	function history() {
		var fg = $('f-group'), fa = $('f-action'), fh = $('f-hold'), body = $('history-rows'), holds = [], rows = [];
		order.forEach(function (n) { (seen[n] || []).forEach(function (d) { if (holds.indexOf(d.hold) < 0) holds.push(d.hold); }); });
		options(fg, order.slice());
		options(fh, holds.sort());
		order.forEach(function (n) {
			if (fg.value && fg.value !== n) return;
			(seen[n] || []).forEach(function (d) {
				if (fa.value === 'acted' ? d.action === 'none' : fa.value && d.action !== fa.value) return;
				if (fh.value && d.hold !== fh.value) return;
				rows.push(d);
			});
		});
		rows.sort(function (a, b) { return b.t - a.t; });
		var frag = document.createDocumentFragment();
		rows.slice(0, MAX_ROWS).forEach(function (d) {
			var tr = el('tr', { class: 'decision ' + d.action });
			tr.appendChild(el('td', { title: d.time }, hhmm(d.t) + ':' + ('0' + new Date(d.t).getSeconds()).slice(-2)));
			tr.appendChild(el('td', {}, d.group));
			tr.appendChild(el('td', { class: d.action }, d.action));
			tr.appendChild(el('td', {}, d.hold));
			tr.appendChild(el('td', { class: 'n' }, d.current + '\u2192' + d.desired));
			tr.appendChild(el('td', { class: 'wide' }, d.explanation));
			frag.appendChild(tr);
		});
		body.replaceChildren(frag);
		$('history-count').textContent = rows.length + ' of the decisions seen' + (rows.length > MAX_ROWS ? ', newest ' + MAX_ROWS + ' shown' : '');
	}

	function refresh() {
		timer = null;
		get(API).then(function (list) {
			var groups = list.groups || [], names = groups.map(function (g) { return g.name; }).slice(0, MAX_GROUPS);
			return Promise.all(names.map(function (n) {
				var u = API + '/' + encodeURIComponent(n);
				return Promise.all([get(u), get(u + '/decisions')]);
			})).then(function (res) {
				var tbody = $('groups-rows'), frag = document.createDocumentFragment(), box = $('chart-list');
				var cf = document.createDocumentFragment();
				order = names;
				res.forEach(function (pair) {
					frag.appendChild(row(pair[0]));
					cf.appendChild(charts(pair[0].name, remember(pair[0].name, pair[1].decisions || [])));
				});
				/* Rows of the groups not charted stay as the daemon wrote them. */
				groups.slice(MAX_GROUPS).forEach(function (g) { frag.appendChild(row(g)); });
				tbody.replaceChildren(frag);
				box.replaceChildren(cf);
				for (var n in seen) if (names.indexOf(n) < 0) delete seen[n];
				history();
				$('updated').textContent = 'Updated ' + new Date().toLocaleTimeString();
				$('updated').className = '';
			});
		}).catch(function (e) {
			$('updated').textContent = 'Not updated: ' + e.message;
			$('updated').className = 'err';
		}).then(function () { timer = setTimeout(refresh, document.hidden ? POLL_MS * 6 : POLL_MS); });
	}

	['f-group', 'f-action', 'f-hold'].forEach(function (id) { $(id).addEventListener('change', history); });
	$('history').hidden = false;
	refresh();
	document.addEventListener('visibilitychange', function () {
		if (!document.hidden && timer) { clearTimeout(timer); refresh(); }
	});
})();
