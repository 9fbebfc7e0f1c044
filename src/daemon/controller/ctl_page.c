/* ctl_page.c — the controller's status page (GET /): an HTML file with its
 * style sheet (GET /page.css) and script (GET /page.js), no external URL,
 * that polls /v1/status every second and draws cluster GPU power against
 * the target as an SVG line chart, with the agents and jobs below. Job ids,
 * agent names and errors are text from elsewhere: the script builds every
 * element with createElement and sets text with textContent (never
 * innerHTML), and the page is served with a Content-Security-Policy that
 * runs only these same-origin files (CTL_PAGE_CSP), so markup in a value is
 * shown, never run. The script marks <body data-points="N"
 * data-measured-w="..."> after each draw (the headless-browser test reads
 * them). */
#include "ctl.h"

const char ctl_page_csp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const char ctl_status_page[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
    "charset=\"utf-8\"><title>pfi-controller</title>\n"
    "<link rel=\"stylesheet\" href=\"page.css\">\n<script src=\"page.js\" "
    "defer></script></head>\n<body data-points=\"0\">\n"
    "<h1>pfi-controller</h1>\n<div class=\"small\" id=\"meta\">loading&hellip;</div>\n"
    "<p><span class=\"big\" id=\"now\">-</span></p>\n"
    "<svg id=\"chart\" width=\"1000\" height=\"320\" viewBox=\"0 0 1000 320\" role=\"img\" "
    "aria-label=\"GPU power vs target\">\n"
    "<text x=\"500\" y=\"160\" text-anchor=\"middle\" fill=\"#888\">waiting for data</text></svg>\n"
    "<div class=\"small\"><span class=\"measured\">&#9632;</span> measured GPU power of the "
    "managed jobs &nbsp; "
    "<span class=\"target\">&#9632;</span> target (with ramps)</div>\n"
    "<table id=\"jobs\"><tr><th>job</th><th>tier</th><th>GPUs</th><th>power (W)</th><th>allocated "
    "(W)</th><th>cap (W/GPU)</th>"
    "<th>tokens/s</th><th>predicted PFI</th></tr></table>\n"
    "<table id=\"agents\"><tr><th>agent</th><th>URL</th><th>state</th></tr></table>\n"
    "</body></html>\n";

const char ctl_page_css[] =
    "body{font-family:-apple-system,Segoe "
    "UI,Helvetica,Arial,sans-serif;margin:1.5em;color:#222;max-width:1100px}\n"
    "h1{font-size:1.4em;margin-bottom:.2em}.small{color:#555;font-size:.85em}\n"
    "table{border-collapse:collapse;font-size:.85em;margin-top:1em}td,th{padding:.2em "
    ".6em;border-bottom:1px solid #e4e4e4;text-align:left}\n"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}.up{color:#1f6f1f}.down{color:#b00020}"
    "\n"
    "#chart{border:1px solid #ddd;background:#fff}.big{font-size:1.3em;font-weight:600}\n"
    ".measured{color:#1f77b4}.target{color:#d62728}\n";

const char ctl_page_js[] =
    "'use strict';\n"
    "var SVG='http://www.w3.org/2000/svg';\n"
    "function fmt(v,d){return v===null||v===undefined||v<0?'-':Number(v).toFixed(d)}\n"
    "/* an element with attributes and text: values are never parsed as markup */\n"
    "function mk(ns,tag,attrs,text){var "
    "e=ns?document.createElementNS(ns,tag):document.createElement(tag);\n"
    "  for(var k in "
    "attrs)e.setAttribute(k,String(attrs[k]));if(text!==undefined)e.textContent=String(text);"
    "return e}\n"
    "function clear(e){while(e.firstChild)e.removeChild(e.firstChild)}\n"
    "/* a table row from [text, class] cells */\n"
    "function row(cells,tag){var "
    "tr=mk(null,'tr',{});cells.forEach(function(c){tr.appendChild(mk(null,tag||'td',c[1]?{'class':"
    "c[1]}:{},c[0]))});return tr}\n"
    "function heads(names){return row(names.map(function(n){return [n]}),'th')}\n"
    "function draw(s){\n"
    "  var h=s.history, svg=document.getElementById('chart'), W=1000, H=320, L=60, B=30;\n"
    "  var t0=h.length?h[0][0]:0, t1=h.length?h[h.length-1][0]:1, ymax=1;\n"
    "  h.forEach(function(p){ymax=Math.max(ymax,p[1],p[2])}); ymax*=1.1; if(t1<=t0)t1=t0+1;\n"
    "  function X(t){return L+(W-L-10)*(t-t0)/(t1-t0)} function Y(v){return H-B-(H-B-10)*v/ymax}\n"
    "  var m='', g='';\n"
    "  h.forEach(function(p){m+=X(p[0]).toFixed(1)+','+Y(p[1]).toFixed(1)+' '; if(p[2]>=0) "
    "g+=X(p[0]).toFixed(1)+','+Y(p[2]).toFixed(1)+' '});\n"
    "  clear(svg);\n"
    "  for(var k=0;k<=4;k++){var v=ymax*k/4;\n"
    "    svg.appendChild(mk(SVG,'line',{x1:L,x2:W-10,y1:Y(v),y2:Y(v),stroke:'#eee'}));\n"
    "    "
    "svg.appendChild(mk(SVG,'text',{x:L-6,y:Y(v)+4,'text-anchor':'end','font-size':11},(v/"
    "1000).toFixed(1)))}\n"
    "  svg.appendChild(mk(SVG,'text',{x:14,y:H/2,transform:'rotate(-90 14 "
    "'+(H/2)+')','font-size':12,'text-anchor':'middle'},'GPU power (kW)'));\n"
    "  svg.appendChild(mk(SVG,'text',{x:W/2,y:H-6,'font-size':12,'text-anchor':'middle'},'last "
    "'+((t1-t0)/60).toFixed(1)+' min'));\n"
    "  "
    "svg.appendChild(mk(SVG,'polyline',{fill:'none',stroke:'#d62728','stroke-width':2,points:g}));"
    "\n"
    "  "
    "svg.appendChild(mk(SVG,'polyline',{id:'measured',fill:'none',stroke:'#1f77b4','stroke-width':"
    "2,points:m}));\n"
    "  var last=h.length?h[h.length-1]:null;\n"
    "  document.getElementById('now').textContent=last?('GPU power '+(last[1]/1000).toFixed(2)+' "
    "kW'+(last[2]>=0?' / target '+(last[2]/1000).toFixed(2)+' kW':' (no event)')):'no data yet';\n"
    "  document.getElementById('meta').textContent='strategy '+s.strategy+(s.dry_run?' (dry "
    "run)':'')+' \\u00b7 agents up '+s.agents_up+'/'+s.agents_total+' \\u00b7 '+(s.active?'event "
    "active':'no active event')+' \\u00b7 cycle '+fmt(s.cycle_ms,1)+' ms';\n"
    "  var jt=document.getElementById('jobs'); clear(jt);\n"
    "  jt.appendChild(heads(['job','tier','GPUs','power (W)','allocated (W)','cap "
    "(W/GPU)','tokens/s','predicted PFI']));\n"
    "  "
    "s.jobs.forEach(function(j){jt.appendChild(row([[j.job_id],[j.tier<0?'-':j.tier],[j.gpus,'n'],["
    "fmt(j.power_w,0),'n'],\n"
    "    "
    "[fmt(j.alloc_w,0),'n'],[fmt(j.alloc_cap_w,0),'n'],[fmt(j.tokens_per_s,0),'n'],[fmt(j.pfi_"
    "predicted,2),'n']]))});\n"
    "  var at=document.getElementById('agents'); clear(at);\n"
    "  at.appendChild(heads(['agent','URL','state']));\n"
    "  s.agents.forEach(function(a){at.appendChild(row([[a.name],[a.url],[a.up?'up':'down: "
    "'+a.error,a.up?'up':'down']]))});\n"
    "  document.body.setAttribute('data-points', h.length);\n"
    "  if(last) document.body.setAttribute('data-measured-w', last[1].toFixed(0));\n"
    "}\n"
    "function poll(){fetch('v1/status',{cache:'no-store'}).then(function(r){return "
    "r.json()}).then(draw).catch(function(e){\n"
    "  document.getElementById('meta').textContent='cannot reach the controller: '+e})}\n"
    "poll(); setInterval(poll, 1000);\n";
