// SPDX-License-Identifier: BSD-3-Clause
// loomd's web UI (controlplane/loomd/webui.h): plain JavaScript and SVG over
// the JSON API (docs/api.md). Pages by the URL's hash: #/ (overview),
// #/job/ID, #/agents, #/policy. Each page polls its API calls every second
// and redraws in place. Nothing is written to the console: problems show
// in the #error banner (the browser test fails on any console message).
"use strict";

const POLL_MS = 1000;
const SVG_NS = "http://www.w3.org/2000/svg";
const STATES = ["waiting", "ready", "active", "done"];

// ---- helpers -------------------------------------------------------------------------

function el(tag, attrs, ...kids) {
	const e = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === null || v === undefined || v === false) continue;
		if (k === "text") e.textContent = v;
		else e.setAttribute(k, v === true ? "" : String(v));
	}
	for (const k of kids) if (k !== null && k !== undefined) e.append(k);
	return e;
}

function svg(tag, attrs, ...kids) {
	const e = document.createElementNS(SVG_NS, tag);
	for (const [k, v] of Object.entries(attrs || {})) {
		if (k === "text") e.textContent = v;
		else e.setAttribute(k, String(v));
	}
	for (const k of kids) if (k) e.append(k);
	return e;
}

async function api(path, opts) {
	const r = await fetch("/api/v1/" + path, Object.assign({cache: "no-store"}, opts || {}));
	let body = null;
	try {
		body = await r.json();
	} catch (e) {
		throw new Error(`${path}: HTTP ${r.status}, not JSON`);
	}
	if (!r.ok) throw new Error(`${path}: ${body && body.error ? body.error : "HTTP " + r.status}`);
	return body;
}

function bytes(n) {
	const u = ["B", "KiB", "MiB", "GiB", "TiB"];
	let i = 0;
	while (n >= 1024 && i < u.length - 1) {
		n /= 1024;
		i++;
	}
	return (i ? n.toFixed(1) : String(n)) + " " + u[i];
}

function us(v) {
	if (v >= 1000000) return (v / 1e6).toFixed(2) + " s";
	if (v >= 1000) return (v / 1000).toFixed(2) + " ms";
	return v.toFixed(v < 10 ? 1 : 0) + " µs";
}

function secs(s) {
	if (s < 60) return s.toFixed(0) + " s";
	if (s < 3600) return (s / 60).toFixed(0) + " min";
	return (s / 3600).toFixed(1) + " h";
}

// Class 0 (first served) is red, the last class blue; -1 (not ranked) grey.
function classColour(cls, k) {
	if (cls < 0) return "#d5d9e0";
	const hue = k > 1 ? Math.round((240 * cls) / (k - 1)) : 0;
	return `hsl(${hue}, 70%, 62%)`;
}

function table(cols, rows, rowAttrs) {
	const head = el("tr", {}, ...cols.map((c) => el("th", {class: c.num ? "num" : null, text: c.h})));
	const body = rows.map((r) =>
		el("tr", rowAttrs ? rowAttrs(r) : {}, ...cols.map((c) => {
			const v = c.f(r);
			return el("td", {class: c.num ? "num" : null}, v instanceof Node ? v : String(v));
		})));
	return el("table", {}, el("thead", {}, head), el("tbody", {}, ...body));
}

function card(k, v) {
	return el("div", {class: "card"}, el("div", {class: "k", text: k}), el("div", {class: "v", text: v}));
}

function stateTag(s) {
	return el("span", {class: "state " + s, text: s});
}

function showError(msg) {
	const e = document.getElementById("error");
	e.textContent = msg || "";
	e.hidden = !msg;
}

// ---- charts --------------------------------------------------------------------------

// A small chart of a per-second series ({t, n, p50_us, p99_us}) over the last 5 minutes.
function latencyChart(title, series, now) {
	const W = 300, H = 70, span = 300;
	const s = svg("svg", {width: W, height: H + 14, viewBox: `0 0 ${W} ${H + 14}`, role: "img"});
	const max = Math.max(1, ...series.map((x) => x.p99_us));
	const x = (t) => ((t - (now - span)) / span) * W;
	const y = (v) => H - (v / max) * (H - 4);
	s.append(svg("line", {x1: 0, y1: H, x2: W, y2: H, stroke: "#dde1e8"}));
	for (const [key, colour] of [["p99_us", "#e59a93"], ["p50_us", "#2d5bd3"]]) {
		const pts = series.filter((p) => p.t >= now - span).map((p) => `${x(p.t).toFixed(1)},${y(p[key]).toFixed(1)}`);
		if (pts.length === 1) pts.push(pts[0].replace(/^[^,]+/, (v) => String(Number(v) + 2)));
		if (pts.length) s.append(svg("polyline", {points: pts.join(" "), fill: "none", stroke: colour, "stroke-width": 1.5}));
	}
	s.append(svg("text", {x: 2, y: 10, fill: "#6b7385", "font-size": 10, text: "max p99 " + us(max)}));
	s.append(svg("text", {x: 2, y: H + 12, fill: "#6b7385", "font-size": 10, text: "-5 min"}));
	s.append(svg("text", {x: W - 24, y: H + 12, fill: "#6b7385", "font-size": 10, text: "now"}));
	const n = series.reduce((a, p) => a + p.n, 0);
	return el("div", {class: "chart"},
		el("div", {class: "title", text: `${title}: ${n} in 5 min (p50 blue, p99 red)`}), s);
}

// ---- DAG layout ----------------------------------------------------------------------

// Layers by longest path from the roots, then orders each layer by its
// parents' mean position (one barycentre sweep). Returns {id: {layer, pos}}.
function layoutDag(ids, edges) {
	const parents = new Map(ids.map((i) => [i, []]));
	const children = new Map(ids.map((i) => [i, []]));
	for (const e of edges) {
		if (!parents.has(e.child) || !children.has(e.parent)) continue;
		parents.get(e.child).push(e.parent);
		children.get(e.parent).push(e.child);
	}
	const layer = new Map();
	const indeg = new Map(ids.map((i) => [i, parents.get(i).length]));
	const queue = ids.filter((i) => indeg.get(i) === 0);
	for (const i of queue) layer.set(i, 0);
	while (queue.length) {
		const i = queue.shift();
		for (const c of children.get(i)) {
			layer.set(c, Math.max(layer.get(c) || 0, layer.get(i) + 1));
			indeg.set(c, indeg.get(c) - 1);
			if (indeg.get(c) === 0) queue.push(c);
		}
	}
	for (const i of ids) if (!layer.has(i)) layer.set(i, 0); // a cycle: loomd refuses them
	const layers = [];
	for (const i of ids) (layers[layer.get(i)] = layers[layer.get(i)] || []).push(i);
	const pos = new Map();
	layers.forEach((l, li) => {
		if (li > 0) {
			const bc = (i) => {
				const ps = parents.get(i).map((p) => pos.get(p)).filter((v) => v !== undefined);
				return ps.length ? ps.reduce((a, b) => a + b, 0) / ps.length : 0;
			};
			l.sort((a, b) => bc(a) - bc(b) || a - b);
		}
		l.forEach((i, k) => pos.set(i, k));
	});
	const out = {};
	for (const i of ids) out[i] = {layer: layer.get(i), pos: pos.get(i), width: layers[layer.get(i)].length};
	return {nodes: out, nlayers: layers.length, widest: Math.max(1, ...layers.map((l) => l.length))};
}

function drawDag(job, k) {
	const NW = 112, NH = 40, GX = 36, GY = 56, PAD = 16;
	const cfs = job.coflow_list;
	const ids = cfs.map((c) => c.id);
	const lay = layoutDag(ids, job.edges);
	const W = Math.max(lay.widest * (NW + GX) - GX + 2 * PAD, 240);
	const H = lay.nlayers * (NH + GY) - GY + 2 * PAD;
	const at = (id) => {
		const n = lay.nodes[id];
		const rowW = n.width * (NW + GX) - GX;
		return {x: (W - rowW) / 2 + n.pos * (NW + GX), y: PAD + n.layer * (NH + GY)};
	};
	const s = svg("svg", {id: "dag", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img"});
	s.append(svg("defs", {}, svg("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
		markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse"},
	svg("path", {d: "M 0 0 L 10 5 L 0 10 z", fill: "#8a93a6"}))));
	for (const e of job.edges) {
		if (!(e.parent in lay.nodes) || !(e.child in lay.nodes)) continue;
		const a = at(e.parent), b = at(e.child);
		const x1 = a.x + NW / 2, y1 = a.y + NH, x2 = b.x + NW / 2, y2 = b.y;
		const my = (y1 + y2) / 2;
		s.append(svg("path", {class: "dag-edge", "data-parent": e.parent, "data-child": e.child,
			d: `M ${x1} ${y1} C ${x1} ${my}, ${x2} ${my}, ${x2} ${y2}`, "marker-end": "url(#arrow)"}));
	}
	for (const c of cfs) {
		const p = at(c.id);
		const g = svg("g", {class: "dag-node", "data-coflow": c.id, "data-class": c.class, "data-state": c.state,
			transform: `translate(${p.x},${p.y})`});
		g.append(svg("title", {text: `coflow ${c.id}: ${c.state}, class ${c.class < 0 ? "none" : c.class}, ` +
			`${c.flows_done}/${c.flows} flows, ${bytes(c.bytes_sent)} sent`}));
		g.append(svg("rect", {width: NW, height: NH, rx: 6, fill: classColour(c.class, k)}));
		g.append(svg("text", {x: 8, y: 16, fill: "#1d2330", "font-weight": 600, text: `${c.id}`}));
		g.append(svg("text", {x: 8, y: 31, fill: "#1d2330",
			text: `${c.state}${c.class >= 0 ? " · c" + c.class : ""} · ${c.flows_done}/${c.flows}`}));
		s.append(g);
	}
	return el("div", {class: "dag"}, s);
}

function legend(k) {
	const items = [];
	for (let c = 0; c < k; c++)
		items.push(el("span", {}, el("span", {class: "swatch", "data-swatch": c}), `class ${c}`));
	items.push(el("span", {}, el("span", {class: "swatch", "data-swatch": -1}), "not ranked"));
	items.push(el("span", {text: "border: dashed waiting, thin ready, thick active; faded done"}));
	const l = el("div", {class: "legend"}, ...items);
	// colours through the CSSOM (the page's policy allows no inline style attributes)
	for (const sw of l.querySelectorAll(".swatch")) sw.style.background = classColour(Number(sw.dataset.swatch), k);
	return l;
}

// ---- pages ---------------------------------------------------------------------------

const pages = {
	async overview() {
		const [st, jobs, dec, prio] = await Promise.all([api("status"), api("jobs"), api("decisions"), api("priorities")]);
		const running = jobs.filter((j) => j.state === "running").length;
		const cards = el("div", {class: "cards"},
			card("policy", st.policy), card("jobs", `${st.jobs} (${running} running)`),
			card("coflows", `${st.coflows} (${st.coflows_active} active)`), card("flows", String(st.flows)),
			card("agents", String(st.agents)), card("decisions", String(st.decisions)),
			card("decision p50 / p99", `${us(st.decision_p50_us)} / ${us(st.decision_p99_us)}`),
			card("push p50 / p99", `${us(st.push_p50_us)} / ${us(st.push_p99_us)}`));
		const charts = el("div", {class: "charts"},
			latencyChart("decision latency", dec.decide, dec.now),
			latencyChart("push latency (table sent to ack)", dec.push, dec.now));
		const jt = table([
			{h: "job", f: (j) => el("a", {href: `#/job/${j.id}`, text: String(j.id)})},
			{h: "name", f: (j) => j.name},
			{h: "tenant", f: (j) => j.tenant},
			{h: "state", f: (j) => stateTag(j.state)},
			{h: "coflows done", num: true, f: (j) => `${j.coflows_done}/${j.coflows}`},
			{h: "flows", num: true, f: (j) => j.flows},
			{h: "sent", num: true, f: (j) => bytes(j.bytes_sent)},
			{h: "age", num: true, f: (j) => secs(j.age_s)},
		], jobs, (j) => ({class: "job-row", "data-job": j.id}));
		jt.id = "jobs-table";
		const pt = table([
			{h: "rank", num: true, f: (p) => p.rank},
			{h: "coflow", f: (p) => p.coflow},
			{h: "job", f: (p) => el("a", {href: `#/job/${p.job}`, text: String(p.job)})},
			{h: "class", f: (p) => p.class},
			{h: "hosts", num: true, f: (p) => p.hosts},
		], prio.slice(0, 20));
		const dt = table([
			{h: "when", f: (d) => new Date(d.t * 1000).toLocaleTimeString()},
			{h: "took", num: true, f: (d) => us(d.decide_us)},
			{h: "coflows", num: true, f: (d) => d.coflows},
		], dec.recent.slice(0, 12));
		return [el("h1", {text: "Overview"}), cards, el("h2", {text: "Latency, last 5 minutes"}), charts,
			el("div", {class: "grid"},
				el("div", {}, el("h2", {text: `Jobs (${jobs.length})`}), jt),
				el("div", {}, el("h2", {text: "Order (first 20 coflows)"}), pt,
					el("h2", {text: "Recent decisions"}), dt))];
	},

	async job(id) {
		const [job, st] = await Promise.all([api("jobs/" + encodeURIComponent(id)), api("status")]);
		const k = st.classes;
		const ct = table([
			{h: "coflow", f: (c) => c.id},
			{h: "state", f: (c) => stateTag(c.state)},
			{h: "class", num: true, f: (c) => (c.class < 0 ? "–" : c.class)},
			{h: "rank", num: true, f: (c) => (c.rank < 0 ? "–" : c.rank)},
			{h: "flows done", num: true, f: (c) => `${c.flows_done}/${c.flows}`},
			{h: "sent", num: true, f: (c) => bytes(c.bytes_sent)},
			{h: "expected", num: true, f: (c) => (c.bytes_expected ? bytes(c.bytes_expected) : "unknown")},
		], job.coflow_list, (c) => ({class: "coflow-row", "data-coflow": c.id}));
		return [el("h1", {text: `Job ${job.id}: ${job.name}`}),
			el("div", {class: "cards"}, card("state", job.state), card("tenant", job.tenant),
				card("weight", String(job.weight)), card("coflows done", `${job.coflows_done}/${job.coflows}`),
				card("sent", bytes(job.bytes_sent)), card("policy", st.policy)),
			el("h2", {text: `DAG: ${job.coflow_list.length} coflows, ${job.edges.length} edges`}),
			legend(k), drawDag(job, k), el("h2", {text: "Coflows"}), ct];
	},

	async agents() {
		const [agents, unknown] = await Promise.all([api("agents"), api("unknown")]);
		const at = table([
			{h: "host", num: true, f: (a) => a.host},
			{h: "name", f: (a) => a.name},
			{h: "peer", f: (a) => a.peer},
			{h: "enforcer", f: (a) => a.enforcer},
			{h: "classes", num: true, f: (a) => a.classes},
			{h: "table version", num: true, f: (a) => a.table_version},
			{h: "acked", num: true, f: (a) => a.acked_version},
			{h: "flows", num: true, f: (a) => a.flows},
			{h: "unknown flows", num: true, f: (a) => a.unknown_flows},
			{h: "unknown bytes", num: true, f: (a) => bytes(a.unknown_bytes)},
			{h: "connected", num: true, f: (a) => secs(a.connected_s)},
		], agents, (a) => ({class: "agent-row", "data-host": a.host}));
		const ut = table([
			{h: "host", num: true, f: (u) => u.host},
			{h: "flow", f: (u) => u.tuple},
			{h: "bytes", num: true, f: (u) => bytes(u.bytes)},
			{h: "first seen", num: true, f: (u) => secs(u.first_seen_s) + " ago"},
			{h: "last seen", num: true, f: (u) => secs(u.last_seen_s) + " ago"},
		], unknown);
		return [el("h1", {text: `Agents (${agents.length})`}), at,
			el("h2", {text: "Unknown flows (seen by agents, announced by no framework)"}), ut];
	},

	async policy() {
		const [pol, list] = await Promise.all([api("policy"), api("policies")]);
		const lt = table([
			{h: "policy", f: (p) => p.name},
			{h: "clairvoyant", f: (p) => (p.clairvoyant ? "yes" : "no")},
			{h: "summary", f: (p) => p.summary},
		], list);
		return [el("h1", {text: "Policy"}),
			el("div", {class: "cards"}, card("in use", pol.policy)),
			el("h2", {text: "Switch"}), policyForm(list),
			el("h2", {text: "Policies loomd can run"}), lt];
	},
};

// The switch form lives across polls (what is typed stays).
let form = null;

function policyForm(list) {
	if (form) return form;
	const token = el("input", {id: "token", type: "password", autocomplete: "off",
		placeholder: "admin token (loomctl web-token)"});
	token.value = sessionStorage.getItem("loom-token") || "";
	const spec = el("input", {id: "spec", list: "policy-names", placeholder: "e.g. sincronia, dclas:sharing=fair"});
	const names = el("datalist", {id: "policy-names"}, ...list.map((p) => el("option", {value: p.name})));
	const button = el("button", {type: "submit", id: "switch"}, "Switch policy");
	const result = el("p", {id: "policy-result", class: "muted"});
	const sync = () => {
		button.disabled = !token.value || !spec.value;
		if (!token.value) result.textContent = "Read-only: switching needs the admin token (loomctl web-token).";
		else if (result.textContent.startsWith("Read-only")) result.textContent = "";
	};
	token.addEventListener("input", () => {
		sessionStorage.setItem("loom-token", token.value);
		sync();
	});
	spec.addEventListener("input", sync);
	form = el("form", {id: "policy-form"}, el("label", {for: "token", text: "Admin token"}), token,
		el("label", {for: "spec", text: "New policy"}), spec, names, button, result);
	form.addEventListener("submit", async (ev) => {
		ev.preventDefault();
		button.disabled = true;
		try {
			const r = await api("policy", {method: "POST", headers: {"Authorization": "Bearer " + token.value,
				"Content-Type": "application/json"}, body: JSON.stringify({policy: spec.value})});
			result.className = "";
			result.textContent = `Switched: ${r.previous} → ${r.policy}`;
			refresh();
		} catch (e) {
			result.className = "bad";
			result.textContent = e.message;
		}
		button.disabled = false;
	});
	sync();
	return form;
}

// ---- router and polling --------------------------------------------------------------

let timer = null, busy = false, generation = 0;

function route() {
	const h = location.hash.replace(/^#/, "") || "/";
	const m = h.match(/^\/job\/([^/]+)$/);
	if (m) return {name: "job", arg: decodeURIComponent(m[1])};
	if (h === "/agents") return {name: "agents"};
	if (h === "/policy") return {name: "policy"};
	return {name: "overview"};
}

async function refresh() {
	if (busy) return;
	busy = true;
	const gen = generation, r = route();
	try {
		const content = await pages[r.name](r.arg);
		if (gen !== generation) return; // the page changed meanwhile
		const view = document.getElementById("view");
		const scroll = window.scrollY;
		view.replaceChildren(...content);
		window.scrollTo(0, scroll);
		document.body.dataset.page = r.name;
		document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
		if (!document.documentElement.dataset.firstRenderMs)
			document.documentElement.dataset.firstRenderMs = String(Math.round(performance.now()));
		showError("");
	} catch (e) {
		showError(e.message);
	} finally {
		busy = false;
	}
}

async function summary() {
	try {
		const st = await api("status");
		document.getElementById("summary").textContent =
			`policy ${st.policy} · ${st.jobs} jobs · ${st.agents} agents · up ${secs(st.uptime_s)}`;
	} catch (e) {
		document.getElementById("summary").textContent = "loomd unreachable";
	}
}

function navigate() {
	generation++;
	form = null;
	for (const a of document.querySelectorAll("nav a"))
		a.classList.toggle("active", a.dataset.nav === route().name);
	busy = false;
	refresh();
}

window.addEventListener("hashchange", navigate);
navigate();
summary();
timer = setInterval(() => {
	refresh();
	summary();
}, POLL_MS);
