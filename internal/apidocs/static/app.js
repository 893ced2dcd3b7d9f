// app.js renders an OpenAPI 3.1 document as a reference page. Every node is
// built with createElement/textContent, so text from the document can never
// become markup. Settings come from data attributes, never from inline script.
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const CONSTRAINTS = ['minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum',
  'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties'];
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
const description = (text) => (text ? el('p', 'desc', text) : null);

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
  add(li, description(s.description));
  const facts = [];
  if (Array.isArray(s.enum)) facts.push(['enum', s.enum.map((v) => JSON.stringify(v)).join(', ')]);
  if (s.const !== undefined) facts.push(['const', JSON.stringify(s.const)]);
  if (s.default !== undefined) facts.push(['default', JSON.stringify(s.default)]);
  for (const k of CONSTRAINTS) if (s[k] !== undefined) facts.push([k, String(s[k])]);
  for (const [k, v] of facts) add(li, add(el('div', 'fact'), el('span', 'fact-key', `${k}:`), el('code', null, v)));
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

function contentBlock(content) {
  const wrap = el('div', 'media');
  for (const [type, media] of Object.entries(content || {})) {
    add(wrap, el('div', 'media-type', type), media && media.schema ? schemaTree(media.schema) : el('p', 'note', 'No schema.'));
  }
  return wrap.childElementCount ? wrap : null;
}

function securityBlock(op) {
  const reqs = Array.isArray(op.security) ? op.security : Array.isArray(spec.security) ? spec.security : [];
  const schemes = (spec.components && spec.components.securitySchemes) || {};
  const alts = reqs.map((r) => {
    const names = Object.keys(r || {});
    if (names.length === 0) return 'none (anonymous)';
    return names.map((n) => {
      const sc = resolve(schemes[n]) || {};
      const kind = [sc.type, sc.scheme || sc.in, sc.name].filter(Boolean).join(' ');
      const scopes = Array.isArray(r[n]) && r[n].length ? ` [${r[n].join(', ')}]` : '';
      return `${n}${kind ? ` (${kind})` : ''}${scopes}`;
    }).join(' + ');
  });
  return add(el('div', 'security'), el('span', 'label', 'Security:'), el('span', null, alts.length ? alts.join('  or  ') : 'none'));
}

function paramsTable(params) {
  if (params.length === 0) return null;
  const table = el('table', 'params');
  const head = add(el('tr'), ...['Name', 'In', 'Required', 'Type', 'Description'].map((h) => el('th', null, h)));
  add(table, add(el('thead'), head));
  const tbody = el('tbody');
  for (const p of params) {
    const schema = p.schema || (p.content && Object.values(p.content)[0] || {}).schema;
    const desc = [p.description, schema && Array.isArray(resolve(schema).enum) ?
      `One of: ${resolve(schema).enum.map((v) => JSON.stringify(v)).join(', ')}` : ''].filter(Boolean).join(' ');
    tbody.append(add(el('tr'), el('td', 'mono', p.name), el('td', null, p.in), el('td', null, p.required ? 'yes' : 'no'),
      el('td', 'mono', typeLabel(schema)), el('td', null, desc)));
  }
  return add(table, tbody);
}

function operationCard(op, withId) {
  const o = op.op;
  const card = el('section', 'op');
  if (withId) card.id = op.id;
  add(card, add(el('div', 'op-head'), el('span', `badge m-${op.method}`, op.method.toUpperCase()),
    el('code', 'path', op.path), o.deprecated ? el('span', 'dep', 'deprecated') : null));
  add(card, el('h3', 'summary', o.summary || o.operationId), description(o.description), securityBlock(o));
  // Path-level parameters apply unless the operation overrides the same name+in.
  const params = new Map();
  for (const p of [...(op.pathParams || []), ...(o.parameters || [])].map(resolve)) {
    if (p && p.name) params.set(`${p.in}:${p.name}`, p);
  }
  const table = paramsTable([...params.values()]);
  if (table) add(card, el('h4', null, 'Parameters'), table);
  const body = resolve(o.requestBody);
  if (body) add(card, el('h4', null, `Request body${body.required ? ' (required)' : ''}`),
    description(body.description), contentBlock(body.content));
  const responses = Object.entries(o.responses || {});
  if (responses.length) card.append(el('h4', null, 'Responses'));
  for (const [status, raw] of responses) {
    const r = resolve(raw) || {};
    add(card, add(el('div', 'response'), add(el('div', 'response-head'),
      el('span', `status-code s${/^[1-5]/.test(status) ? status.charAt(0) : 'x'}`, status), el('span', null, r.description)), contentBlock(r.content)));
  }
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
      const text = `${method} ${path} ${op.summary || ''} ${op.operationId || ''}`.toLowerCase();
      ops.push({ id, method, path, op, tags, text, pathParams: item.parameters });
    }
  }
  return ops;
}

function render() {
  const info = spec.info || {};
  const pageTitle = document.body.dataset.title || '';
  document.title = info.title && info.title !== pageTitle ? `${info.title} · ${pageTitle}` : pageTitle || info.title || 'API';
  const [content, nav] = [$('content'), $('nav')];
  content.replaceChildren(add(el('div', 'info'), add(el('h2', null, info.title || 'API'),
    info.version ? el('span', 'version', `v${info.version}`) : null), description(info.summary), description(info.description)));

  const ops = collect();
  const tagNames = (Array.isArray(spec.tags) ? spec.tags : []).map((t) => t.name);
  for (const op of ops) for (const t of op.tags) if (!tagNames.includes(t)) tagNames.push(t);
  const groups = [];
  const placed = new Set();
  for (const name of tagNames) {
    const mine = ops.filter((o) => o.tags.includes(name));
    if (mine.length === 0) continue;
    const tagInfo = (spec.tags || []).find((t) => t.name === name) || {};
    const navList = el('ul');
    const navGroup = add(el('div', 'nav-group'), el('div', 'nav-tag', name), navList);
    const section = add(el('section', 'tag'), el('h2', 'tag-name', name), description(tagInfo.description));
    const items = mine.map((op) => {
      const a = add(el('a'), el('span', `badge small m-${op.method}`, op.method.toUpperCase()), el('span', 'mono', op.path));
      a.href = `#${encodeURIComponent(op.id)}`;
      const li = navList.appendChild(add(el('li'), a));
      // An operation with several tags is shown under each; only the first copy gets the anchor id.
      const card = section.appendChild(operationCard(op, !placed.has(op.id)));
      placed.add(op.id);
      return { op, li, card };
    });
    nav.append(navGroup);
    content.append(section);
    groups.push({ navGroup, section, items });
  }
  if (ops.length === 0) content.append(el('p', 'status', 'This document has no operations.'));

  $('filter').addEventListener('input', (e) => {
    const q = e.target.value.trim().toLowerCase();
    for (const g of groups) {
      let any = false;
      for (const { op, li, card } of g.items) {
        const hit = q === '' || op.text.includes(q);
        li.hidden = card.hidden = !hit;
        any ||= hit;
      }
      g.navGroup.hidden = g.section.hidden = !any;
    }
  });
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
