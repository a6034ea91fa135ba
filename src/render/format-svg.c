// SPDX-License-Identifier: MIT
// A self-contained interactive flame graph as one SVG file: frames as
// rectangles (callers below callees), a little embedded JavaScript for
// details on hover, zoom on click and search with highlighting. It needs no
// network and opens in any browser. Differential graphs color by change.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "format-profile.h"

#define SVG_WIDTH 1200.0
#define FRAME_H 16
#define PAD_TOP 46
#define PAD_BOTTOM 30
#define PAD_X 10.0
#define MIN_WIDTH 0.1 /* px: narrower frames are left out */

struct svgctx {
	struct strbuf *out;
	double scale;      /* px per sample */
	int height;
	int diff;
	double maxdelta;   /* diff: largest |delta| of any node */
	double total;
};

/* Text from the target, made safe twice: control characters escaped by
 * strbuf_add_escaped, then XML's special characters as entities. */
void format_xml_escaped(struct strbuf *out, const char *s)
{
	struct strbuf e;
	strbuf_init(&e);
	strbuf_add_escaped(&e, s ? s : "");
	for (size_t i = 0; i < e.len; i++) {
		char c = e.buf[i];
		switch (c) {
		case '&': strbuf_adds(out, "&amp;"); break;
		case '<': strbuf_adds(out, "&lt;"); break;
		case '>': strbuf_adds(out, "&gt;"); break;
		case '"': strbuf_adds(out, "&quot;"); break;
		case '\'': strbuf_adds(out, "&apos;"); break;
		default: strbuf_add(out, &c, 1); break;
		}
	}
	strbuf_release(&e);
}

static int max_depth(const struct sd_flame *n, double scale, int d)
{
	int m = d;
	for (const struct sd_flame *c = n->child; c; c = c->next) {
		if ((double)c->value * scale < MIN_WIDTH)
			continue;
		int k = max_depth(c, scale, d + 1);
		if (k > m)
			m = k;
	}
	return m;
}

/* Is N mostly (over half its samples) the stack of a thread that held a
 * lock others waited on? Shared callers (start_thread) are not. */
static int holder_node(const struct sd_flame *n)
{
	return n->held && n->hold_note && 2 * n->held > n->value;
}

static int any_holder(const struct sd_flame *n)
{
	if (holder_node(n))
		return 1;
	for (const struct sd_flame *c = n->child; c; c = c->next)
		if (any_holder(c))
			return 1;
	return 0;
}

static double max_delta(const struct sd_flame *n)
{
	double m = fabs(n->delta);
	for (const struct sd_flame *c = n->child; c; c = c->next) {
		double k = max_delta(c);
		if (k > m)
			m = k;
	}
	return m;
}

static void color_of(const struct svgctx *c, const struct sd_flame *n, char *buf, size_t sz)
{
	uint64_t h = sd_hash(n->name, strlen(n->name), 0);
	double v = (double)(h % 1000) / 1000.0;
	if (c->diff) {
		/* White for no change, red for growth, blue for shrinkage. */
		double r = c->maxdelta > 0 ? n->delta / c->maxdelta : 0;
		if (r > 1)
			r = 1;
		if (r < -1)
			r = -1;
		int k = (int)(210 - 180 * fabs(r));
		if (r >= 0)
			snprintf(buf, sz, "rgb(255,%d,%d)", k, k);
		else
			snprintf(buf, sz, "rgb(%d,%d,255)", k, k);
		return;
	}
	double oncpu = n->value ? (double)n->on_cpu / (double)n->value : 0;
	if (holder_node(n))
		/* A lock's holder: reds, apart from both palettes. */
		snprintf(buf, sz, "rgb(%d,%d,%d)", 200 + (int)(40 * v), (int)(30 + 30 * v),
			 (int)(40 + 30 * v));
	else if (oncpu >= 0.5)
		/* Mostly on a CPU: the classic warm palette. */
		snprintf(buf, sz, "rgb(%d,%d,%d)", 205 + (int)(50 * v), (int)(80 + 130 * v),
			 (int)(55 * (1 - v)));
	else
		/* Mostly off CPU (blocked, sleeping): blues. */
		snprintf(buf, sz, "rgb(%d,%d,%d)", (int)(60 + 60 * v), (int)(120 + 70 * v),
			 200 + (int)(55 * v));
}

static void node(struct svgctx *c, const struct sd_flame *n, double x, int depth)
{
	double w = (double)n->value * c->scale;
	if (w < MIN_WIDTH)
		return;
	double px = PAD_X + x * c->scale;
	int y = c->height - PAD_BOTTOM - (depth + 1) * FRAME_H;
	char fill[48];
	color_of(c, n, fill, sizeof(fill));
	struct strbuf *o = c->out;
	int holder = !c->diff && holder_node(n);
	strbuf_addf(o, "<g class=\"%s\" data-x=\"%.0f\" data-w=\"%" PRIu64 "\" data-d=\"%d\">",
		    holder ? "f holder" : "f", x, n->value, depth);
	strbuf_adds(o, "<title>");
	format_xml_escaped(o, n->name);
	double p = c->total > 0 ? 100.0 * (double)n->value / c->total : 0;
	if (c->diff) {
		double a = (double)n->value - n->delta;
		strbuf_addf(o, " (%" PRIu64 " samples, %.2f%%; before %.1f, change %+.2f%%)",
			    n->value, p, a, c->total > 0 ? 100.0 * n->delta / c->total : 0.0);
	} else {
		strbuf_addf(o, " (%" PRIu64 " samples, %.2f%%, on-CPU %.0f%%)", n->value, p,
			    n->value ? 100.0 * (double)n->on_cpu / (double)n->value : 0.0);
		if (holder) {
			strbuf_adds(o, "; ");
			format_xml_escaped(o, n->hold_note);
			if (n->held < n->value)
				strbuf_addf(o, " (in %" PRIu64 " of its samples)", n->held);
		}
	}
	strbuf_addf(o, "</title><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
		       "rx=\"2\"/><text x=\"%.1f\" y=\"%d\">",
		    px, y, w, FRAME_H - 1, fill, px + 3, y + FRAME_H - 4);
	/* A first label; the script redoes it on zoom. */
	size_t fit = w > 6 ? (size_t)((w - 6) / 7.2) : 0;
	size_t len = strlen(n->name);
	if (fit >= 3) {
		if (len <= fit) {
			format_xml_escaped(o, n->name);
		} else {
			char *cut = sd_xmalloc(fit + 1);
			memcpy(cut, n->name, fit - 2);
			cut[fit - 2] = '\0';
			/* Do not split a UTF-8 sequence. */
			size_t l = fit - 2;
			while (l > 0 && ((unsigned char)cut[l - 1] & 0xc0) == 0x80)
				cut[--l] = '\0';
			if (l > 0 && (unsigned char)cut[l - 1] >= 0xc0)
				cut[--l] = '\0';
			format_xml_escaped(o, cut);
			strbuf_adds(o, "..");
			free(cut);
		}
	}
	strbuf_adds(o, "</text></g>\n");
	double cx = x;
	for (const struct sd_flame *ch = n->child; ch; ch = ch->next) {
		node(c, ch, cx, depth + 1);
		cx += (double)ch->value;
	}
}

/* The script: kept small, no dependencies, ES5 so any browser runs it. */
static const char svg_script[] =
    "var frames=[],details,matchedt,resetb,searchb,zoomed=null,re=null;\n"
    "function init(){frames=[].slice.call(document.getElementsByClassName('f'));\n"
    " details=document.getElementById('details');matchedt=document.getElementById('matched');\n"
    " resetb=document.getElementById('reset');searchb=document.getElementById('search');\n"
    " frames.forEach(function(g){g.fname=g.getElementsByTagName('title')[0].textContent;\n"
    "  g.label=g.fname.replace(/ \\([0-9]+ samples.*$/,'');\n"
    "  g.fx=+g.getAttribute('data-x');g.fw=+g.getAttribute('data-w');g.fd=+g.getAttribute('data-d');\n"
    "  g.onmouseover=function(){details.textContent=g.fname;};\n"
    "  g.onmouseout=function(){details.textContent=' ';};\n"
    "  g.onclick=function(){zoom(g);};});\n"
    " resetb.onclick=function(){zoom(null);};\n"
    " searchb.onclick=function(){if(re){search(null);}else{var s=prompt('Search (regular expression)','');if(s)search(s);}};\n"
    " window.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.keyCode==70){e.preventDefault();searchb.onclick();}\n"
    "  else if(e.keyCode==27){zoom(null);search(null);}});\n"
    " zoom(null);}\n"
    "function label(g,w){var t=g.getElementsByTagName('text')[0],n=Math.floor((w-6)/7.2);\n"
    " t.textContent=n<3?'':(g.label.length<=n?g.label:g.label.substring(0,n-2)+'..');}\n"
    "function zoom(z){var x0=0,w0=frames.length?frames[0].fw:1,d0=0;\n"
    " frames.forEach(function(g){if(g.fd==0&&g.fw>w0)w0=g.fw;});\n"
    " if(z){x0=z.fx;w0=z.fw;d0=z.fd;}zoomed=z;\n"
    " resetb.style.display=z?'inline':'none';\n"
    " frames.forEach(function(g){var r=g.getElementsByTagName('rect')[0],t=g.getElementsByTagName('text')[0],nx,nw,show=true;\n"
    "  if(g.fd<d0){show=g.fx<=x0&&g.fx+g.fw>=x0+w0;nx=0;nw=W;g.style.opacity=show?0.6:1;}\n"
    "  else{show=g.fx>=x0&&g.fx+g.fw<=x0+w0+1e-6;nx=(g.fx-x0)/w0*W;nw=g.fw/w0*W;g.style.opacity=1;}\n"
    "  if(show&&nw<0.5)show=false;\n"
    "  g.style.display=show?'':'none';if(!show)return;\n"
    "  r.setAttribute('x',PX+nx);r.setAttribute('width',nw);t.setAttribute('x',PX+nx+3);label(g,nw);});\n"
    " if(re)search(re.source);}\n"
    "function search(s){re=null;var iv=[],tot=0;\n"
    " frames.forEach(function(g){var r=g.getElementsByTagName('rect')[0];\n"
    "  if(g.origfill===undefined)g.origfill=r.getAttribute('fill');r.setAttribute('fill',g.origfill);});\n"
    " if(!s){searchb.textContent='Search';matchedt.textContent=' ';return;}\n"
    " try{re=new RegExp(s);}catch(e){alert('invalid regular expression: '+e.message);return;}\n"
    " frames.forEach(function(g){if(g.fd==0)tot+=g.fw;\n"
    "  if(re.test(g.label)){g.getElementsByTagName('rect')[0].setAttribute('fill','rgb(230,0,230)');iv.push([g.fx,g.fx+g.fw]);}});\n"
    " iv.sort(function(a,b){return a[0]-b[0]||b[1]-a[1];});var m=0,end=-1;\n"
    " iv.forEach(function(v){if(v[0]>=end){m+=v[1]-v[0];end=v[1];}else if(v[1]>end){m+=v[1]-end;end=v[1];}});\n"
    " searchb.textContent='Clear';\n"
    " matchedt.textContent='Matched: '+(tot?(100*m/tot).toFixed(1):'0')+'%';}\n"
    "window.addEventListener('load',init);\n";

/* "Flame graph: orderd (PID 4242), 10.0 s, on- and off-CPU, idle hidden":
 * what was sampled, for how long and what the graph leaves out. */
static void default_title(struct strbuf *t, const struct sd_profile *p, int diff)
{
	strbuf_adds(t, diff ? "Differential flame graph" : "Flame graph");
	for (size_t i = 0; i < p->nprocs && i < 3; i++) {
		strbuf_adds(t, i ? ", " : ": ");
		strbuf_add_escaped(t, p->procs[i].comm ? p->procs[i].comm : "?");
		strbuf_addf(t, " (PID %d)", (int)p->procs[i].pid);
	}
	if (p->nprocs > 3)
		strbuf_addf(t, " and %zu more", p->nprocs - 3);
	if (diff)
		return;
	if (p->duration_us)
		strbuf_addf(t, ", %.1f s", (double)p->duration_us / 1e6);
	strbuf_adds(t, p->opts.cpu == SD_CPU_ON	   ? ", on-CPU only"
		       : p->opts.cpu == SD_CPU_OFF ? ", off-CPU only"
						   : ", on- and off-CPU");
	if (p->opts.no_idle)
		strbuf_adds(t, ", idle hidden");
}

void format_profile_svg(struct strbuf *out, struct sd_profile *p, const struct sd_prender *o)
{
	struct sd_flame *root = profile_flame(p);
	struct svgctx c = {.out = out, .diff = o && o->diff};
	double wpx = SVG_WIDTH - 2 * PAD_X;
	c.total = (double)root->value;
	c.scale = root->value ? wpx / (double)root->value : 0;
	int depth = root->value ? max_depth(root, c.scale, 0) + 1 : 1;
	c.height = PAD_TOP + depth * FRAME_H + PAD_BOTTOM;
	c.maxdelta = c.diff ? max_delta(root) : 0;
	struct strbuf deftitle;
	strbuf_init(&deftitle);
	default_title(&deftitle, p, c.diff);
	const char *title = o && o->title ? o->title : deftitle.buf;
	strbuf_adds(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	strbuf_addf(out,
		    "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		    "height=\"%d\" viewBox=\"0 0 %.0f %d\">\n",
		    SVG_WIDTH, c.height, SVG_WIDTH, c.height);
	strbuf_adds(out, "<style type=\"text/css\">\n"
			 "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
			 ".f { cursor: pointer; }\n"
			 ".f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
			 "#title { font-size: 17px; text-anchor: middle; }\n"
			 ".btn { cursor: pointer; fill: #333; text-decoration: underline; }\n"
			 "</style>\n");
	strbuf_adds(out, "<script type=\"text/ecmascript\"><![CDATA[\n");
	strbuf_addf(out, "var W=%.1f,PX=%.1f;\n", wpx, PAD_X);
	strbuf_adds(out, svg_script);
	strbuf_adds(out, "]]></script>\n");
	strbuf_addf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%d\" fill=\"%s\"/>\n",
		    SVG_WIDTH, c.height, c.diff ? "#f4f4f4" : "#fbf7ee");
	strbuf_addf(out, "<text id=\"title\" x=\"%.0f\" y=\"22\">", SVG_WIDTH / 2);
	format_xml_escaped(out, title);
	strbuf_adds(out, "</text>\n");
	strbuf_addf(out, "<text x=\"%.0f\" y=\"38\" style=\"fill:#555\">", PAD_X);
	if (c.diff)
		strbuf_adds(out, "width: samples in B; red grew, blue shrank (vs A scaled to B's "
				 "total)");
	else
		strbuf_addf(out, "%" PRIu64 " samples; warm: on-CPU, blue: off-CPU (blocked "
				 "or sleeping)%s. Click to zoom, Ctrl-F to search, Esc to reset.",
			    root->value, any_holder(root) ? ", red: holds a lock others wait on" : "");
	strbuf_adds(out, "</text>\n");
	strbuf_addf(out, "<text id=\"reset\" class=\"btn\" x=\"%.0f\" y=\"22\" "
			 "style=\"display:none\">Reset Zoom</text>\n",
		    PAD_X);
	strbuf_addf(out, "<text id=\"search\" class=\"btn\" x=\"%.0f\" y=\"22\" "
			 "style=\"text-anchor:end\">Search</text>\n",
		    SVG_WIDTH - PAD_X);
	strbuf_addf(out, "<text id=\"details\" x=\"%.0f\" y=\"%d\"> </text>\n", PAD_X,
		    c.height - 10);
	strbuf_addf(out, "<text id=\"matched\" x=\"%.0f\" y=\"%d\" style=\"text-anchor:end\"> "
			 "</text>\n",
		    SVG_WIDTH - PAD_X, c.height - 10);
	if (root->value)
		node(&c, root, 0, 0);
	else
		strbuf_addf(out, "<text x=\"%.0f\" y=\"%d\">no samples</text>\n", PAD_X,
			    PAD_TOP + 12);
	strbuf_adds(out, "</svg>\n");
	strbuf_release(&deftitle);
	profile_flame_free(root);
}
