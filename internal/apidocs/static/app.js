// app.js renders an OpenAPI 3.1 document as a reference page. Every node is
// built with createElement/textContent, so text from the document can never
// become markup: even the Markdown of descriptions is parsed here into DOM
// nodes. Settings come from data attributes, never from inline script.
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const CONSTRAINTS = ['minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum',
  'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties'];
const PARAM_ORDER = ['path', 'query', 'header', 'cookie'];
// Request headers that carry no credential, for an operation without a security scheme.
const ORDINARY_HEADERS = new Set(['user-agent', 'accept', 'accept-language', 'content-type', 'origin', 'referer', 'x-request-id']);
const MAX_DEPTH = 12; // bounds trees even when a document nests deeply without cycles

const $ = (id) => document.getElementById(id);
let spec = {};

function el(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined && text !== null && text !== '') n.textContent = String(text);
  return n;
}

function add(parent, ...kids) {
  for (const k of kids) if (k) parent.append(k);
  return parent;
}

// ---------------------------------------------------------------------------
// Markdown: the subset descriptions use (paragraphs, headings, lists, fenced
// code, pipe tables; inline code, bold, italics, links), built as DOM nodes.

// safeHref returns a link target a reader may follow: same-page anchors,
// same-origin paths and http(s)/mailto URLs. Anything else (javascript:,
// data:, a file name relative to the repository's docs) gets no link.
function safeHref(href) {
  const h = href.trim();
  if (h.startsWith('#')) return h;
  if (h.startsWith('/') && !h.startsWith('//')) return h;
  try {
    const u = new URL(h);
    if (['http:', 'https:', 'mailto:'].includes(u.protocol)) return u.href;
  } catch { /* relative: not on this server */ }
  return null;
}

// inline appends the inline Markdown of text to parent.
function inline(parent, text) {
  let buf = '';
  const flush = () => { if (buf) parent.append(document.createTextNode(buf)); buf = ''; };
  for (let i = 0; i < text.length;) {
    const c = text[i];
    if (c === '\\' && i + 1 < text.length && /[\\`*_[\]()#+\-.!|{}<>]/.test(text[i + 1])) {
      buf += text[i + 1]; i += 2; continue;
    }
    if (c === '`') {
      let n = 0;
      while (text[i + n] === '`') n++;
      const fence = '`'.repeat(n);
      const end = text.indexOf(fence, i + n);
      if (end > 0) {
        flush();
        let code = text.slice(i + n, end);
        if (/^ .* $/.test(code)) code = code.slice(1, -1);
        parent.append(el('code', null, code));
        i = end + n; continue;
      }
      buf += fence; i += n; continue;
    }
    // **strong**: the markers touch the text inside ("****", a hint of a
    // secret, and "a ** b" stay as they are).
    // Only '*' marks emphasis: '_' is too common inside names (user_meta, __Host-).
    if (c === '*' && text[i + 1] === '*' && text[i - 1] !== '*') {
      const end = text.indexOf('**', i + 2);
      if (end > i + 2 && !/[\s*]/.test(text[i + 2]) && !/\s/.test(text[end - 1]) && text[end + 2] !== '*') {
        flush();
        inline(parent.appendChild(el('strong')), text.slice(i + 2, end));
        i = end + 2; continue;
      }
    }
    // *emphasis*, not a star inside a word or a glob (GATEHOUSE_*, ratelimit.*).
    if (c === '*' && text[i + 1] && !/[\s*]/.test(text[i + 1]) && !/[\w.*]/.test(text[i - 1] || '')) {
      const end = text.indexOf('*', i + 1);
      if (end > i + 1 && !/\s/.test(text[end - 1]) && text[end + 1] !== '*' && !/\w/.test(text[end + 1] || '')) {
        flush();
        inline(parent.appendChild(el('em')), text.slice(i + 1, end));
        i = end + 1; continue;
      }
    }
    if (c === '[') {
      const m = /^\[([^\]]+)\]\(([^()\s]+)\)/.exec(text.slice(i));
      if (m) {
        flush();
        const href = safeHref(m[2]);
        if (href) {
          const a = el('a');
          a.href = href;
          if (/^https?:/.test(href)) a.rel = 'noopener noreferrer';
          inline(a, m[1]);
          parent.append(a);
        } else {
          // A link to a file of the repository's docs: name it, link nothing.
          inline(parent, m[1]);
          if (m[2] !== m[1]) parent.append(' (', el('code', 'doc-ref', m[2]), ')');
        }
        i += m[0].length; continue;
      }
    }
    buf += c; i++;
  }
  flush();
  return parent;
}

const LIST_ITEM = /^( *)([-*+]|\d{1,9}[.)]) +(.*)$/;
const HEADING = /^ {0,3}(#{1,6}) +(.*?)(?: +#+)? *$/;
const FENCE = /^ {0,3}(```+|~~~+)(.*)$/;
const TABLE_SEP = /^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$/;

const tableCells = (line) => line.trim().replace(/^\|/, '').replace(/\|$/, '').split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));

// markdown renders text as block nodes inside a div.md; headingLevel is the
// element level used for a top-level "#" heading. idPrefix, when set, gives
// headings ids (idPrefix + slug) for deep links into the text.
function markdown(text, { cls = '', headingLevel = 3, idPrefix = '' } = {}) {
  if (typeof text !== 'string' || text.trim() === '') return null;
  const root = el('div', `md${cls ? ` ${cls}` : ''}`);
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  let para = [];
  const endPara = () => {
    if (para.length) root.append(inline(el('p'), para.join(' ')));
    para = [];
  };
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    let m;
    if (line.trim() === '') { endPara(); i++; continue; }
    if ((m = FENCE.exec(line))) {
      endPara();
      const close = m[1];
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(close); i++) body.push(lines[i]);
      i++;
      const code = el('code', null, body.join('\n'));
      if (m[2].trim()) code.className = `lang-${slug(m[2])}`;
      root.append(add(el('pre', 'code-block'), code));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      endPara();
      const h = inline(el(`h${Math.min(6, headingLevel + m[1].length - 1)}`, 'md-heading'), m[2]);
      if (idPrefix) h.id = idPrefix + slug(m[2]);
      root.append(h);
      i++; continue;
    }
    if (line.trim().startsWith('|') && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      endPara();
      const table = el('table', 'md-table');
      add(table, add(el('thead'), add(el('tr'), ...tableCells(line).map((c) => inline(el('th'), c)))));
      const tbody = table.appendChild(el('tbody'));
      for (i += 2; i < lines.length && lines[i].trim().startsWith('|'); i++) {
        tbody.append(add(el('tr'), ...tableCells(lines[i]).map((c) => inline(el('td'), c))));
      }
      root.append(add(el('div', 'table-wrap'), table));
      continue;
    }
    if (LIST_ITEM.test(line) && (para.length === 0 || LIST_ITEM.exec(line)[1].length === 0)) {
      endPara();
      i = list(lines, i, root);
      continue;
    }
    para.push(line.trim());
    i++;
  }
  endPara();
  return root;
}

// list parses the list starting at lines[i] into parent, nesting items by
// indentation, and returns the index of the first line after it.
function list(lines, i, parent) {
  const first = LIST_ITEM.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const ul = el(ordered ? 'ol' : 'ul');
  if (ordered && parseInt(first[2], 10) !== 1) ul.start = parseInt(first[2], 10);
  let li = null;
  let text = [];
  const endItem = () => {
    if (li) li.prepend(inline(el('span', 'li-text'), text.join(' ')));
    text = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === '') {
      // A blank line ends the list unless an item of it (or a nested one) follows.
      const next = lines.slice(i + 1).find((l) => l.trim() !== '');
      const nm = next !== undefined && LIST_ITEM.exec(next);
      if (!nm || nm[1].length < indent) break;
      i++; continue;
    }
    const m = LIST_ITEM.exec(line);
    const lead = line.length - line.trimStart().length;
    if (m && m[1].length === indent && /\d/.test(m[2]) === ordered) {
      endItem();
      li = ul.appendChild(el('li'));
      text = [m[3]];
      i++; continue;
    }
    if (m && m[1].length > indent && li) {
      i = list(lines, i, li);
      continue;
    }
    if (!m && li && lead > indent) { text.push(line.trim()); i++; continue; }
    if (!m && li && lead === 0 && !HEADING.test(line) && !FENCE.test(line) && !line.trim().startsWith('|')) {
      text.push(line.trim()); i++; continue; // a lazy continuation line
    }
    break;
  }
  endItem();
  parent.append(ul);
  return i;
}

// pathNode shows a path whole, with a line-break opportunity after each
// slash, so a long path wraps between its segments rather than inside one.
function pathNode(tag, cls, path) {
  const n = el(tag, cls);
  String(path).split(/(?<=\/)/).forEach((part, i) => {
    if (i > 0) n.append(el('wbr'));
    n.append(part);
  });
  return n;
}

const slug = (s) => String(s).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

// ---------------------------------------------------------------------------
// Schemas.

// resolve follows local JSON-pointer $refs ("#/components/…"), at most a few hops.
function resolve(obj) {
  for (let hops = 0; obj && typeof obj.$ref === 'string' && hops < 10; hops++) {
    if (!obj.$ref.startsWith('#/')) return obj;
    let cur = spec;
    for (const raw of obj.$ref.slice(2).split('/')) {
      let key = raw;
      try { key = decodeURIComponent(raw); } catch { /* keep raw */ }
      key = key.replace(/~1/g, '/').replace(/~0/g, '~');
      cur = cur && Object.hasOwn(cur, key) ? cur[key] : undefined;
    }
    if (cur === undefined) return obj;
    obj = cur;
  }
  return obj;
}

const refName = (ref) => String(ref).split('/').pop().replace(/~1/g, '/').replace(/~0/g, '~');
const json = (v) => JSON.stringify(v);

// typeLabel gives a one-line type: "string (email)", "array<User>", "string | null".
function typeLabel(s, depth = 0) {
  if (!s || typeof s !== 'object') return s === false ? 'never' : 'any';
  if (s.$ref) return refName(s.$ref);
  if (depth > 3) return '…';
  const one = (t) => (t === 'array' ? `array<${typeLabel(s.items, depth + 1)}>` : t);
  let label;
  if (Array.isArray(s.type)) label = s.type.map(one).join(' | ');
  else if (s.type) label = one(s.type);
  else if (s.const !== undefined) label = 'const';
  else if (s.enum) label = 'enum';
  else if (s.properties) label = 'object';
  else {
    const alt = ['oneOf', 'anyOf', 'allOf'].find((k) => Array.isArray(s[k]));
    label = alt ? s[alt].map((x) => typeLabel(x, depth + 1)).join(alt === 'allOf' ? ' & ' : ' | ') : 'any';
  }
  if (s.format) label += ` (${s.format})`;
  if (s.nullable === true) label += ' | null'; // OpenAPI 3.0 documents
  return label;
}

// schemaNode renders one named schema as a tree item. seen holds the $refs on
// the current path, so a recursive schema stops instead of expanding forever.
function schemaNode(name, schema, required, seen, depth) {
  const line = add(el('div', 'line'), name !== null ? el('span', 'prop', name) : null);
  const li = add(el('li'), line);
  let s = schema && typeof schema === 'object' ? schema : {};
  if (s.$ref) {
    const target = resolve(s);
    line.append(el('span', 'ref', refName(s.$ref)));
    const stop = seen.has(s.$ref) ? '(recursive, shown above)' : target === s ? '(unresolved)' : '';
    if (stop) { line.append(el('span', 'note', stop)); return li; }
    seen = new Set(seen).add(s.$ref);
    s = { ...target, ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== '$ref')) };
  }
  add(line, el('span', 'type', typeLabel(s)), required ? el('span', 'req', 'required') : null,
    s.deprecated ? el('span', 'dep', 'deprecated') : null, s.readOnly ? el('span', 'note', 'read-only') : null,
    s.writeOnly ? el('span', 'note', 'write-only') : null);
  add(li, markdown(s.description, { cls: 'desc' }));
  const facts = [];
  if (Array.isArray(s.enum)) facts.push(['enum', s.enum]);
  if (s.const !== undefined) facts.push(['const', [s.const]]);
  if (s.default !== undefined) facts.push(['default', [s.default]]);
  if (s.example !== undefined) facts.push(['example', [s.example]]);
  if (Array.isArray(s.examples)) facts.push(['examples', s.examples]);
  for (const k of CONSTRAINTS) if (s[k] !== undefined) facts.push([k, [s[k]]]);
  for (const [k, vs] of facts) {
    const fact = add(el('div', 'fact'), el('span', 'fact-key', `${k}:`));
    for (const v of vs) fact.append(el('code', null, json(v)), ' ');
    li.append(fact);
  }
  if (depth >= MAX_DEPTH) return li;

  const kids = el('ul', 'schema');
  const req = new Set(Array.isArray(s.required) ? s.required : []);
  for (const [k, v] of Object.entries(s.properties || {})) kids.append(schemaNode(k, v, req.has(k), seen, depth + 1));
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (types.includes('array') && s.items) kids.append(schemaNode('[items]', s.items, false, seen, depth + 1));
  const extra = s.additionalProperties;
  if (extra && typeof extra === 'object') kids.append(schemaNode('{key}', extra, false, seen, depth + 1));
  for (const alt of ['allOf', 'oneOf', 'anyOf']) {
    if (!Array.isArray(s[alt])) continue;
    const group = add(el('li'), el('div', 'line', { allOf: 'all of', oneOf: 'one of', anyOf: 'any of' }[alt]));
    const list = el('ul', 'schema');
    s[alt].forEach((x, i) => list.append(schemaNode(`#${i + 1}`, x, false, seen, depth + 1)));
    kids.append(add(group, list));
  }
  if (kids.childElementCount > 0) li.append(kids);
  return li;
}

function schemaTree(schema) {
  return add(el('ul', 'schema root'), schemaNode(null, schema, false, new Set(), 0));
}

// errorCodes finds the values a response's error_code may take: the enum or
// const of an error_code property, through $ref, allOf, oneOf and anyOf.
function errorCodes(schema, depth = 0, seen = new Set()) {
  const out = new Set();
  if (!schema || typeof schema !== 'object' || depth > 8) return out;
  if (schema.$ref) {
    if (seen.has(schema.$ref)) return out;
    seen = new Set(seen).add(schema.$ref);
  }
  const s = resolve(schema);
  const prop = s && s.properties && resolve(s.properties.error_code);
  if (prop) {
    for (const p of [prop, ...['allOf', 'oneOf', 'anyOf'].flatMap((k) => (Array.isArray(prop[k]) ? prop[k].map(resolve) : []))]) {
      if (Array.isArray(p.enum)) p.enum.forEach((v) => out.add(v));
      if (p.const !== undefined) out.add(p.const);
    }
  }
  for (const k of ['allOf', 'oneOf', 'anyOf']) {
    if (Array.isArray(s[k])) for (const x of s[k]) errorCodes(x, depth + 1, seen).forEach((v) => out.add(v));
  }
  return out;
}

// examplesOf lists the examples of a media type (or parameter): its
// `example`, its named `examples`, else those of its schema.
function examplesOf(media) {
  const out = [];
  if (!media || typeof media !== 'object') return out;
  if (media.example !== undefined) out.push({ value: media.example });
  for (const [name, raw] of Object.entries(media.examples || {})) {
    const ex = resolve(raw) || {};
    if (ex.value !== undefined || ex.externalValue) out.push({ name, summary: ex.summary, description: ex.description, value: ex.value, externalValue: ex.externalValue });
  }
  if (out.length === 0 && media.schema) {
    const s = resolve(media.schema) || {};
    if (s.example !== undefined) out.push({ value: s.example });
    if (Array.isArray(s.examples)) s.examples.forEach((value) => out.push({ value }));
  }
  return out;
}

function exampleBlock(ex, mediaType) {
  const box = el('div', 'example');
  const title = [ex.name, ex.summary].filter(Boolean).join(': ');
  add(box, el('div', 'example-title', title ? `Example: ${title}` : 'Example'), markdown(ex.description, { cls: 'desc' }));
  if (ex.externalValue) {
    const href = safeHref(String(ex.externalValue));
    const a = el('a', null, String(ex.externalValue));
    if (href) a.href = href;
    box.append(a);
  } else {
    const text = typeof ex.value === 'string' && !/json/.test(mediaType || '') ? ex.value : JSON.stringify(ex.value, null, 2);
    box.append(add(el('pre', 'code-block'), el('code', null, text)));
  }
  return box;
}

// contentBlock renders each media type of a body: its schema (in a
// <details>, open when asked) and its examples.
function contentBlock(content, { open = true } = {}) {
  const wrap = el('div', 'media');
  for (const [type, media] of Object.entries(content || {})) {
    const m = media || {};
    wrap.append(el('div', 'media-type', type));
    if (m.schema) {
      const label = m.schema.$ref ? `Schema: ${refName(m.schema.$ref)}` : `Schema: ${typeLabel(m.schema)}`;
      const details = add(el('details', 'schema-box'), el('summary', null, label), schemaTree(m.schema));
      details.open = open;
      wrap.append(details);
    }
    for (const ex of examplesOf(m)) wrap.append(exampleBlock(ex, type));
  }
  return wrap.childElementCount ? wrap : null;
}

// ---------------------------------------------------------------------------
// Operations.

function schemeLabel(name) {
  const sc = resolve(((spec.components || {}).securitySchemes || {})[name]) || {};
  if (sc.type === 'http') {
    const scheme = String(sc.scheme || '').toLowerCase();
    if (scheme === 'bearer') return 'Authorization: Bearer …';
    if (scheme === 'basic') return 'Authorization: Basic …';
    return `Authorization: ${sc.scheme || ''} …`;
  }
  if (sc.type === 'apiKey') return sc.in === 'header' ? `${sc.name}: …` : `${sc.name} (${sc.in})`;
  if (sc.type) return sc.type;
  return '';
}

// securityBlock lists the credential alternatives of an operation; each
// scheme links to its description in the overview.
function securityBlock(o, params) {
  const reqs = Array.isArray(o.security) ? o.security : Array.isArray(spec.security) ? spec.security : null;
  const box = add(el('div', 'security'), el('h4', null, 'Credentials'));
  if (!reqs || reqs.length === 0) {
    // No security scheme, but a route may still read a token from a header
    // of its own (a refresh token): name those instead of saying "none".
    const headers = params.filter((p) => p.in === 'header' && !ORDINARY_HEADERS.has(String(p.name).toLowerCase()));
    const p = el('p', 'cred-none', headers.length ? 'No API credential; it reads ' : 'None: anyone may call this operation.');
    headers.forEach((h, i) => add(p, i > 0 ? (i === headers.length - 1 ? ' and ' : ', ') : null, el('code', null, h.name),
      h.required ? ' (required)' : null));
    if (headers.length) p.append(' (see Parameters).');
    box.append(p);
    return box;
  }
  const listEl = el('ul', 'cred-list');
  if (reqs.length > 1) box.append(el('p', 'cred-intro', 'Any one of:'));
  for (const r of reqs) {
    const names = Object.keys(r || {});
    const li = listEl.appendChild(el('li'));
    if (names.length === 0) { li.textContent = 'none (anonymous)'; continue; }
    names.forEach((n, idx) => {
      if (idx > 0) li.append(' and ');
      const a = el('a', 'scheme-link', n);
      a.href = `#scheme-${slug(n)}`;
      li.append(a);
      const label = schemeLabel(n);
      if (label) li.append(' ', el('code', null, label));
      if (Array.isArray(r[n]) && r[n].length) li.append(` [${r[n].join(', ')}]`);
    });
  }
  return add(box, listEl);
}

function paramsTable(params) {
  if (params.length === 0) return null;
  const table = el('table', 'params');
  const head = add(el('tr'), ...['Name', 'In', 'Type', 'Description'].map((h) => el('th', null, h)));
  add(table, add(el('thead'), head));
  const tbody = el('tbody');
  for (const p of params) {
    const schema = p.schema || (p.content && Object.values(p.content)[0] || {}).schema;
    const rs = resolve(schema) || {};
    const desc = el('td');
    // huma copies a parameter's description into its schema; show it once.
    add(desc, markdown(p.description || rs.description, { cls: 'desc' }));
    if (Array.isArray(rs.enum)) add(desc, add(el('div', 'fact'), el('span', 'fact-key', 'One of:'), ...rs.enum.flatMap((v) => [el('code', null, json(v)), ' '])));
    if (rs.default !== undefined) add(desc, add(el('div', 'fact'), el('span', 'fact-key', 'Default:'), el('code', null, json(rs.default))));
    const named = Object.values(p.examples || {}).map(resolve).find((x) => x && x.value !== undefined);
    const ex = p.example !== undefined ? p.example : named ? named.value : rs.example !== undefined ? rs.example : Array.isArray(rs.examples) ? rs.examples[0] : undefined;
    if (ex !== undefined) add(desc, add(el('div', 'fact'), el('span', 'fact-key', 'Example:'), el('code', null, typeof ex === 'string' ? ex : json(ex))));
    const name = add(el('td', 'mono'), el('span', 'pname', p.name), p.required ? el('span', 'req', 'required') : null,
      p.deprecated ? el('span', 'dep', 'deprecated') : null);
    tbody.append(add(el('tr'), name, el('td', null, p.in), el('td', 'mono', typeLabel(schema)), desc));
  }
  return add(table, tbody);
}

function headersTable(headers) {
  const rows = Object.entries(headers || {});
  if (rows.length === 0) return null;
  const table = el('table', 'params headers');
  add(table, add(el('thead'), add(el('tr'), ...['Header', 'Type', 'Description'].map((h) => el('th', null, h)))));
  const tbody = table.appendChild(el('tbody'));
  for (const [name, raw] of rows) {
    const h = resolve(raw) || {};
    const rs = resolve(h.schema) || {};
    tbody.append(add(el('tr'), add(el('td', 'mono'), el('span', 'pname', name), h.required ? el('span', 'req', 'always') : null),
      el('td', 'mono', typeLabel(h.schema)), add(el('td'), markdown(h.description || rs.description, { cls: 'desc' }))));
  }
  return table;
}

function responseBlock(status, raw) {
  const r = resolve(raw) || {};
  const cls = /^[1-5]/.test(status) ? status.charAt(0) : 'x';
  const box = add(el('div', `response r${cls}`), add(el('div', 'response-head'),
    el('span', `status-code s${cls}`, status), add(el('div', 'response-desc'), markdown(r.description, { cls: 'desc' }))));
  const codes = new Set();
  for (const media of Object.values(r.content || {})) errorCodes(media && media.schema).forEach((c) => codes.add(c));
  if (codes.size) add(box, add(el('div', 'error-codes'), el('span', 'fact-key', 'error_code:'), ...[...codes].flatMap((c) => [el('code', 'code-chip', String(c)), ' '])));
  add(box, headersTable(r.headers), contentBlock(r.content, { open: cls === '2' }));
  return box;
}

// opParams merges path-level parameters with the operation's own (the same
// name and location: the operation's wins) and orders them by location.
function opParams(op) {
  const params = new Map();
  for (const p of [...(op.pathParams || []), ...(op.op.parameters || [])].map(resolve)) {
    if (p && p.name) params.set(`${p.in}:${p.name}`, p);
  }
  const rank = (p) => { const i = PARAM_ORDER.indexOf(p.in); return i < 0 ? PARAM_ORDER.length : i; };
  return [...params.values()].sort((a, b) => rank(a) - rank(b));
}

function operationCard(op, withId) {
  const o = op.op;
  const card = el('section', 'op');
  if (withId) card.id = op.id;
  if (o.operationId) card.setAttribute('data-operation-id', o.operationId);
  const link = el('a', 'anchor', '#');
  link.href = `#${encodeURIComponent(op.id)}`;
  link.title = 'Link to this operation';
  add(card, add(el('div', 'op-head'), el('span', `badge m-${op.method}`, op.method.toUpperCase()),
    pathNode('code', 'path', op.path), o.deprecated ? el('span', 'dep', 'deprecated') : null, link));
  add(card, add(el('h3', 'summary'), document.createTextNode(o.summary || o.operationId || ''),
    o.operationId ? el('code', 'op-id', o.operationId) : null));
  card.append(markdown(o.description, { cls: 'desc' }) || el('p', 'note', 'No description.'));
  const params = opParams(op);
  card.append(securityBlock(o, params));
  const table = paramsTable(params);
  if (table) add(card, el('h4', null, 'Parameters'), table);
  const body = resolve(o.requestBody);
  if (body) add(card, el('h4', null, `Request body${body.required ? ' (required)' : ''}`),
    markdown(body.description, { cls: 'desc' }), contentBlock(body.content));
  const responses = Object.entries(o.responses || {});
  if (responses.length) card.append(el('h4', null, 'Responses'));
  for (const [status, raw] of responses) card.append(responseBlock(status, raw));
  return card;
}

function collect() {
  const ops = [];
  const ids = new Set();
  for (const [path, rawItem] of Object.entries(spec.paths || {})) {
    const item = resolve(rawItem) || {};
    for (const method of METHODS) {
      const op = item[method];
      if (!op || typeof op !== 'object') continue;
      let id = `op-${op.operationId || `${method}-${path}`}`;
      for (let n = 2; ids.has(id); n++) id = `op-${op.operationId || `${method}-${path}`}-${n}`;
      ids.add(id);
      const tags = Array.isArray(op.tags) && op.tags.length ? op.tags : ['Other'];
      const text = [method, path, op.summary, op.operationId, op.description, ...tags].filter(Boolean).join('\n').toLowerCase();
      ops.push({ id, method, path, op, tags, text, pathParams: item.parameters });
    }
  }
  return ops;
}

// ---------------------------------------------------------------------------
// The page.

function overviewSection(info) {
  const section = el('section', 'overview');
  section.id = 'overview';
  add(section, add(el('div', 'info'), el('h2', null, info.title || 'API'),
    info.version ? el('span', 'version', `v${info.version}`) : null),
  markdown(info.summary, { cls: 'lead' }), markdown(info.description, { headingLevel: 2, idPrefix: 'overview-' }));
  const schemes = Object.entries((spec.components || {}).securitySchemes || {});
  if (schemes.length) {
    const h = el('h3', 'md-heading', 'Security schemes');
    h.id = 'overview-security-schemes';
    const dl = el('dl', 'schemes');
    for (const [name, raw] of schemes) {
      const dt = add(el('dt'), el('span', 'mono', name), ' ', el('code', null, schemeLabel(name)));
      dt.id = `scheme-${slug(name)}`;
      add(dl, dt, add(el('dd'), markdown((resolve(raw) || {}).description, { cls: 'desc' })));
    }
    add(section, h, dl);
  }
  return section;
}

// tagOrder lists the tags: the document's own order when it declares tags,
// else alphabetical (the order of first use follows path spelling, not sense).
function tagOrder(ops) {
  const declared = (Array.isArray(spec.tags) ? spec.tags : []).map((t) => t.name);
  const used = [...new Set(ops.flatMap((o) => o.tags))].filter((t) => !declared.includes(t)).sort((a, b) => a.localeCompare(b));
  return [...declared, ...used];
}

function render() {
  const info = spec.info || {};
  const pageTitle = document.body.dataset.title || '';
  document.title = info.title && info.title !== pageTitle ? `${info.title} · ${pageTitle}` : pageTitle || info.title || 'API';
  const [content, nav] = [$('content'), $('nav')];
  const overview = overviewSection(info);
  content.replaceChildren(overview);

  // The sidebar starts with the overview's own sections.
  const overviewNav = add(el('div', 'nav-group nav-overview'), el('div', 'nav-tag', 'Overview'));
  const overviewList = overviewNav.appendChild(el('ul'));
  for (const h of overview.querySelectorAll('h3[id]')) {
    const a = el('a', null, h.textContent);
    a.href = `#${encodeURIComponent(h.id)}`;
    overviewList.append(add(el('li'), a));
  }
  nav.replaceChildren(overviewNav);

  const ops = collect();
  const groups = [];
  const placed = new Set();
  const navLinks = new Map();
  for (const name of tagOrder(ops)) {
    const mine = ops.filter((o) => o.tags.includes(name));
    if (mine.length === 0) continue;
    const tagInfo = (spec.tags || []).find((t) => t.name === name) || {};
    const navList = el('ul');
    const navGroup = add(el('div', 'nav-group'), el('div', 'nav-tag', name), navList);
    const section = add(el('section', 'tag'), el('h2', 'tag-name', name), markdown(tagInfo.description, { cls: 'desc' }));
    section.id = `tag-${slug(name)}`;
    const items = mine.map((op) => {
      // The whole path, wrapped where it must be, never cut short: several
      // paths share a long prefix.
      const a = add(el('a'), el('span', `badge small m-${op.method}`, op.method.toUpperCase()), pathNode('span', 'nav-path', op.path));
      a.href = `#${encodeURIComponent(op.id)}`;
      a.title = op.op.summary || op.op.operationId || '';
      const li = navList.appendChild(add(el('li'), a));
      // An operation with several tags is shown under each; only the first copy gets the anchor id.
      const card = section.appendChild(operationCard(op, !placed.has(op.id)));
      if (!placed.has(op.id)) navLinks.set(op.id, a);
      placed.add(op.id);
      return { op, li, card };
    });
    nav.append(navGroup);
    content.append(section);
    groups.push({ navGroup, section, items });
  }
  if (ops.length === 0) content.append(el('p', 'status', 'This document has no operations.'));
  const empty = content.appendChild(el('p', 'status no-match', 'No operation matches the search.'));
  empty.hidden = true;

  const filter = $('filter');
  const count = $('count');
  const apply = () => {
    const terms = filter.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const g of groups) {
      let any = false;
      for (const { op, li, card } of g.items) {
        const hit = terms.every((t) => op.text.includes(t));
        li.hidden = card.hidden = !hit;
        any ||= hit;
      }
      g.navGroup.hidden = g.section.hidden = !any;
    }
    for (const op of ops) if (terms.every((t) => op.text.includes(t))) shown++;
    overview.hidden = overviewNav.hidden = terms.length > 0;
    empty.hidden = shown > 0 || ops.length === 0;
    count.textContent = terms.length ? `${shown} of ${ops.length}` : `${ops.length} operations`;
  };
  filter.addEventListener('input', () => {
    apply();
    // Results start at the top; the place the reader was at may now be empty.
    window.scrollTo(0, 0);
    nav.scrollTop = 0;
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === '/' && document.activeElement !== filter && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      filter.focus();
    }
  });
  apply();

  let current = null;
  // follow scrolls to the element the hash names (the render is async, so
  // the browser's own scroll on load found nothing), clearing a search that
  // hides it, and marks it and its sidebar entry.
  const follow = () => {
    let id = '';
    try { id = decodeURIComponent(location.hash.slice(1)); } catch { id = location.hash.slice(1); }
    const target = id ? document.getElementById(id) : null;
    if (current) current.classList.remove('current');
    for (const a of nav.querySelectorAll('a[aria-current]')) a.removeAttribute('aria-current');
    current = null;
    if (!target) return;
    if (target.closest('[hidden]')) { filter.value = ''; apply(); }
    if (target.classList.contains('op')) { target.classList.add('current'); current = target; }
    target.scrollIntoView({ block: 'start' });
    const link = navLinks.get(id);
    if (link) {
      link.setAttribute('aria-current', 'location');
      // Bring the entry into the sidebar's own view without moving the page.
      const top = link.offsetTop - nav.clientHeight / 3;
      if (link.offsetTop < nav.scrollTop || link.offsetTop > nav.scrollTop + nav.clientHeight - link.offsetHeight) nav.scrollTop = Math.max(0, top);
    }
  };
  window.addEventListener('hashchange', follow);
  follow();
  document.body.setAttribute('data-rendered', 'true'); // for tests and tools: the page is complete
}

async function main() {
  try {
    const res = await fetch(document.body.dataset.specUrl, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    spec = await res.json();
    render();
  } catch (err) {
    $('content').replaceChildren(el('p', 'status error', `Could not load the API document: ${err.message}`));
  }
}

main();
