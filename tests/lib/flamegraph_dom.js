// SPDX-License-Identifier: MIT
// Runs the script embedded in a stackdump flame graph SVG against a tiny
// fake DOM (node, no browser) and prints what hover, click-to-zoom, search
// and reset did, one "key: value" per line, for tests/cli/test_profile.py.
// Usage: node flamegraph_dom.js FILE.svg FRAME SEARCH
'use strict';
const fs = require('fs');
const [file, frameName, searchFor] = process.argv.slice(2);
const svg = fs.readFileSync(file, 'utf8');
const script = svg.split('<![CDATA[')[1].split(']]>')[0];
const unxml = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
	.replace(/&apos;/g, "'").replace(/&amp;/g, '&');

function node(tag, attrs, children) {
	return {
		tag, attrs: attrs || {}, children: children || [], style: {}, textContent: '',
		getAttribute(k) { return this.attrs[k]; },
		setAttribute(k, v) { this.attrs[k] = String(v); },
		getElementsByTagName(t) { return this.children.filter((c) => c.tag === t); },
	};
}

const FR = [];
const re = /<g class="f" data-x="([\d.]+)" data-w="(\d+)" data-d="(\d+)"><title>([^<]*)<\/title><rect x="([\d.]+)" y="\d+" width="([\d.]+)"[^>]*fill="([^"]+)"/g;
let m;
while ((m = re.exec(svg))) {
	const title = node('title');
	title.textContent = unxml(m[4]);
	FR.push(node('g', {'data-x': m[1], 'data-w': m[2], 'data-d': m[3]},
		[title, node('rect', {x: m[5], width: m[6], fill: m[7]}), node('text')]));
}
const ids = {details: node('text'), matched: node('text'), reset: node('text'),
	search: node('text')};
let onload = null;
global.document = {getElementsByClassName: () => FR, getElementById: (id) => ids[id]};
global.window = {addEventListener: (ev, f) => { if (ev === 'load') onload = f; }};
global.prompt = () => searchFor;
global.alert = (x) => { throw new Error(x); };
(0, eval)(script);
onload();
const byLabel = (l) => FR.find((g) => g.label === l);
const f = byLabel(frameName);
f.onmouseover();
console.log('hover: ' + ids.details.textContent);
f.onclick();
console.log('zoom width: ' + f.getElementsByTagName('rect')[0].attrs.width);
console.log('zoom hidden: ' + FR.filter((g) => g.style.display === 'none').map((g) => g.label)
	.sort().join(','));
console.log('reset shown: ' + (ids.reset.style.display !== 'none'));
ids.search.onclick();
console.log('search: ' + ids.matched.textContent);
console.log('highlighted: ' + FR.filter((g) => g.getElementsByTagName('rect')[0].attrs.fill ===
	'rgb(230,0,230)').map((g) => g.label).sort().join(','));
ids.reset.onclick();
console.log('after reset hidden: ' + FR.filter((g) => g.style.display === 'none').length);
