// ---- replay's transforms, at run time -------------------------------------
// The chain of the transforms file (TRANSFORMS, in order), applied to each
// request as replay run applies it: the same rules, ported to JavaScript.
// Counts go to replay_transform_changed and replay_transform_failed, by
// transform.

const transformChanged = new Counter('replay_transform_changed');
const transformFailed = new Counter('replay_transform_failed');

// utf8 is s as UTF-8 bytes (k6 has no TextEncoder).
function utf8(s) {
  const out = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c < 0x80) {
      out.push(c);
    } else if (c < 0x800) {
      out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    } else if (c < 0x10000) {
      out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    } else {
      out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
  }
  return new Uint8Array(out).buffer;
}

// ---- JSON: the scalars of a document, with their key paths and spans ----

// walkJSON calls visit(keys, start, end) for each scalar of d in document
// order (d.slice(start, end) as written, a string with its quotes; keys:
// object keys as written, array indexes as numbers). It returns false when
// d is not one well-formed JSON value, or nests deeper than 32.
function walkJSON(d, visit) {
  const keys = [];
  let i = 0;
  const ws = () => {
    while (i < d.length && (d[i] === ' ' || d[i] === '\n' || d[i] === '\r' || d[i] === '\t')) i++;
  };
  const strEnd = () => {
    for (let j = i + 1; j < d.length; j++) {
      const c = d[j];
      if (c === '\\') {
        j++;
        if (j >= d.length) return -1;
        if (d[j] === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(d.slice(j + 1, j + 5))) return -1;
          j += 4;
        } else if ('"\\/bfnrt'.indexOf(d[j]) < 0) {
          return -1;
        }
      } else if (c === '"') {
        return j + 1;
      } else if (c < ' ') {
        return -1;
      }
    }
    return -1;
  };
  const child = (key) => {
    if (keys.length === 32) return false;
    keys.push(key);
    const ok = value();
    keys.pop();
    return ok;
  };
  const value = () => {
    if (i >= d.length) return false;
    const c = d[i];
    if (c === '{') {
      i++;
      ws();
      if (d[i] === '}') { i++; return true; }
      for (;;) {
        if (d[i] !== '"') return false;
        const e = strEnd();
        if (e < 0) return false;
        const key = d.slice(i + 1, e - 1);
        i = e;
        ws();
        if (d[i] !== ':') return false;
        i++;
        ws();
        if (!child(key)) return false;
        ws();
        if (d[i] === '}') { i++; return true; }
        if (d[i] !== ',') return false;
        i++;
        ws();
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (d[i] === ']') { i++; return true; }
      for (let n = 0; ; n++) {
        if (!child(n)) return false;
        ws();
        if (d[i] === ']') { i++; return true; }
        if (d[i] !== ',') return false;
        i++;
        ws();
      }
    }
    const start = i;
    if (c === '"') {
      const e = strEnd();
      if (e < 0) return false;
      i = e;
    } else {
      while (i < d.length && /[0-9a-z+\-.E]/.test(d[i])) i++;
      if (!/^(true|false|null|-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)$/.test(d.slice(start, i))) return false;
    }
    return visit(keys, start, i) !== false;
  };
  ws();
  const ok = value();
  ws();
  return ok && i === d.length;
}

// isJSON: a body worth walking starts (after space) with { or [.
function isJSON(b) {
  return typeof b === 'string' && /^[ \t\r\n]*[{[]/.test(b);
}

// atPath reports whether keys stand at path (split on dots; * is any
// key or element; a number is also that array index).
function atPath(path, keys) {
  if (path.length !== keys.length) return false;
  for (let k = 0; k < path.length; k++) {
    const seg = path[k];
    if (seg === '*') continue;
    if (typeof keys[k] === 'number' ? !/^[0-9]{1,9}$/.test(seg) || Number(seg) !== keys[k] : keys[k] !== seg) return false;
  }
  return true;
}

// splice replaces spans ({start, end, repl}, in order) of s.
function splice(s, spans) {
  let out = '';
  let at = 0;
  for (const sp of spans) {
    out += s.slice(at, sp.start) + sp.repl;
    at = sp.end;
  }
  return out + s.slice(at);
}

// rewriteJSON gives each scalar fn(keys, raw) chooses to replace its new
// raw text (inside the quotes for a string without escapes); null when
// none changed or the body is not JSON.
function rewriteJSON(body, fn) {
  const spans = [];
  const ok = walkJSON(body, (keys, start, end) => {
    let raw = body.slice(start, end);
    let s = start;
    let e = end;
    const quoted = raw[0] === '"';
    if (quoted) {
      raw = raw.slice(1, -1);
      s++;
      e--;
    }
    if (quoted && raw.indexOf('\\') >= 0) return true;
    const repl = fn(keys, raw, quoted);
    if (repl !== null && repl !== undefined) spans.push({ start: s, end: e, repl: repl });
    return true;
  });
  return ok && spans.length > 0 ? splice(body, spans) : null;
}

// jsonAt is the first scalar of d at path, as correlate reads it: a
// string's text between its quotes, a number as written; null for none,
// or null.
function jsonAt(d, path) {
  let found = null;
  if (!isJSON(d)) return null;
  const ok = walkJSON(d, (keys, start, end) => {
    if (found === null && atPath(path, keys)) found = d.slice(start, end);
    return true;
  });
  if (!ok || found === null || found === 'null') return null;
  return found[0] === '"' ? found.slice(1, -1) : found;
}

// ---- URIs, queries, headers, cookies ----

// splitURL splits an absolute URL into its base (scheme://host) and its
// URI (raw path and query).
function splitURL(url) {
  const i = url.indexOf('/', url.indexOf('://') + 3);
  return i < 0 ? [url, ''] : [url.slice(0, i), url.slice(i)];
}

// rewriteQuery gives each query parameter's raw value to fn(name, value),
// which returns its new raw value or null; the URI, or null when none
// changed. Separators and parameters without = stay as they were.
function rewriteQuery(uri, fn) {
  const q = uri.indexOf('?');
  if (q < 0) return null;
  let changed = false;
  const parts = uri.slice(q + 1).split('&').map((p) => {
    const eq = p.indexOf('=');
    if (eq < 0) return p;
    const v = fn(p.slice(0, eq), p.slice(eq + 1));
    if (v === null || v === undefined) return p;
    changed = true;
    return p.slice(0, eq + 1) + v;
  });
  return changed ? uri.slice(0, q + 1) + parts.join('&') : null;
}

// unescapeQuery decodes %XX and + of a raw query value.
function unescapeQuery(v) {
  return v.replace(/\+/g, ' ').replace(/%([0-9a-fA-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
}

// escapeQuery writes v, the new value of the raw value orig, escaped
// (: + and space) when orig was.
function escapeQuery(v, orig) {
  if (orig.indexOf('%') < 0) return v;
  return v.replace(/[:+ ]/g, (c) => ({ ':': '%3A', '+': '%2B', ' ': '%20' })[c]);
}

// headerKey is the key of headers that names name, in any case; null.
function headerKey(headers, name) {
  const lower = name.toLowerCase();
  for (const k of Object.keys(headers)) {
    if (k.toLowerCase() === lower) return k;
  }
  return null;
}

// hasName reports whether list holds name, in any case (header names).
function hasName(list, name) {
  const lower = name.toLowerCase();
  return list.some((n) => n.toLowerCase() === lower);
}

// rewriteCookies gives each cookie of a Cookie header value to fn(name,
// value), which returns its new value or null; the header, or null when
// none changed. Spacing and separators stay as they were.
function rewriteCookies(v, fn) {
  let changed = false;
  const parts = v.split(';').map((part) => {
    const eq = part.indexOf('=');
    if (eq < 0) return part;
    const value = part.slice(eq + 1);
    const trimmed = value.trim();
    const nv = fn(part.slice(0, eq).trim(), trimmed);
    if (nv === null || nv === undefined) return part;
    changed = true;
    const lead = value.length - value.replace(/^ +/, '').length;
    return part.slice(0, eq + 1 + lead) + nv + value.slice(lead + trimmed.length);
  });
  return changed ? parts.join(';') : null;
}

// ---- timestamps ----

const floorDiv = (a, b) => (a % b !== 0n && a < 0n ? a / b - 1n : a / b);

// parse3339 reads an RFC 3339 time as rrpair.ParseRFC3339 does: its
// instant in ns (a BigInt) and how it was written; null for none.
function parse3339(v) {
  const m = /^([0-9]{4})-([0-9]{2})-([0-9]{2})([Tt ])([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$/.exec(v);
  if (!m) return null;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[5], m[6], m[7]].map(Number);
  const days = [31, y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (mo < 1 || mo > 12 || d < 1 || d > days[mo - 1] || h > 23 || mi > 59 || s > 60) return null;
  const st = { sep: m[4], frac: m[8] ? m[8].length - 1 : 0, zulu: '', offset: 0 };
  if (m[9] === 'Z' || m[9] === 'z') {
    st.zulu = m[9];
  } else {
    const oh = Number(m[9].slice(1, 3));
    const om = Number(m[9].slice(4, 6));
    if (oh > 23 || om > 59) return null;
    st.offset = (oh * 3600 + om * 60) * (m[9][0] === '-' ? -1 : 1);
  }
  const t = new Date(0);
  t.setUTCFullYear(y, mo - 1, d);
  t.setUTCHours(h, mi, s, 0);
  const nanos = m[8] ? BigInt((m[8].slice(1) + '000000000').slice(0, 9)) : 0n;
  st.ns = BigInt(t.getTime()) * 1000000n + nanos - BigInt(st.offset) * 1000000000n;
  return st;
}

const pad = (n, w) => String(n).padStart(w, '0');

// format3339 writes the instant ns as st was written (offset, fraction
// digits, separator, zone letter), as Stamp.AppendRFC3339 does.
function format3339(st, ns) {
  const local = ns + BigInt(st.offset) * 1000000000n;
  const t = new Date(Number(floorDiv(local, 1000000n)));
  let out = pad(t.getUTCFullYear(), 4) + '-' + pad(t.getUTCMonth() + 1, 2) + '-' + pad(t.getUTCDate(), 2) + st.sep +
    pad(t.getUTCHours(), 2) + ':' + pad(t.getUTCMinutes(), 2) + ':' + pad(t.getUTCSeconds(), 2);
  if (st.frac > 0) {
    out += '.' + (pad(local - floorDiv(local, 1000000000n) * 1000000000n, 9) + '0'.repeat(st.frac)).slice(0, st.frac);
  }
  if (st.zulu) return out + st.zulu;
  const off = Math.abs(st.offset);
  return out + (st.offset < 0 ? '-' : '+') + pad(Math.floor(off / 3600), 2) + ':' + pad(Math.floor((off % 3600) / 60), 2);
}

// shiftValue is v moved by sh.delta ns if it is a timestamp (an RFC 3339
// string, 10-digit epoch seconds, 13-digit epoch ms) within sh.window of
// the recorded ts, or named; null otherwise.
function shiftValue(v, named, sh) {
  const near = (ns) => named || (ns - sh.rec <= sh.window && sh.rec - ns <= sh.window);
  if (v.length >= 20) {
    const st = parse3339(v);
    return st && near(st.ns) ? format3339(st, st.ns + sh.delta) : null;
  }
  if ((v.length !== 10 && v.length !== 13) || !/^[0-9]+$/.test(v)) return null;
  const unit = v.length === 13 ? 1000000n : 1000000000n;
  const n = BigInt(v);
  if (!near(n * unit)) return null;
  const shifted = n + floorDiv(sh.delta, unit);
  const s = shifted < 0n ? '-' : pad(shifted, v.length);
  return s.length === v.length ? s : null;
}

function applyTimestamps(t, req, ctx) {
  if (!req.ts) {
    ctx.failed = true; // no recorded ts: nothing to shift from
    return;
  }
  const rec = BigInt(req.ts);
  const sh = { rec: rec, delta: ctx.nowNs - rec, window: BigInt(t.window_ns) };
  for (const k of Object.keys(req.headers)) {
    const named = hasName(t.headers, k);
    if (!named && !t.auto) continue;
    const v = shiftValue(req.headers[k], named, sh);
    if (v !== null) {
      req.headers[k] = v;
      ctx.changed = true;
    }
  }
  const uri = rewriteQuery(req.uri, (name, value) => {
    const named = t.query.indexOf(name) >= 0;
    if (!named && !t.auto) return null;
    const v = shiftValue(unescapeQuery(value), named, sh);
    return v === null ? null : escapeQuery(v, value);
  });
  if (uri !== null) {
    req.uri = uri;
    ctx.changed = true;
  }
  if ((t.auto || t.json.length > 0) && isJSON(req.body)) {
    const body = rewriteJSON(req.body, (keys, raw) => {
      const named = t.json.some((p) => atPath(p, keys));
      return named || t.auto ? shiftValue(raw, named, sh) : null;
    });
    if (body !== null) {
      req.body = body;
      ctx.changed = true;
    }
  }
}

// ---- JWT, re-signed through WebCrypto ----

const jwtRE = /^eyJ[A-Za-z0-9_=-]*\.[A-Za-z0-9_=-]*\.[A-Za-z0-9_=-]*$/;

const b64e = (s) => encoding.b64encode(s, 'rawurl');
const b64d = (s) => encoding.b64decode(s.replace(/=+$/, ''), 'rawurl', 's');

// topLevel finds the top-level members of a JSON object: key → span of
// its value; null when obj is not a JSON object.
function topLevel(obj) {
  const found = {};
  if (!/^[ \t\r\n]*\{/.test(obj)) return null;
  const ok = walkJSON(obj, (keys, start, end) => {
    if (keys.length === 1) found[keys[0]] = { start: start, end: end };
    return true;
  });
  return ok ? found : null;
}

// setTopLevel rewrites the top-level values of obj that set names
// (members: topLevel's), keeping every other byte, and adds those of add
// that obj lacks at the end.
function setTopLevel(obj, members, set, add) {
  const spans = Object.keys(members).filter((k) => k in set).map((k) => ({ start: members[k].start, end: members[k].end, repl: set[k] }));
  spans.sort((a, b) => a.start - b.start);
  let out = splice(obj, spans);
  for (const k of Object.keys(add)) {
    if (k in members) continue;
    const end = out.lastIndexOf('}');
    const sep = /\{[ \t\r\n]*$/.test(out.slice(0, end)) ? '' : ',';
    out = out.slice(0, end) + sep + JSON.stringify(k) + ':' + add[k] + out.slice(end);
  }
  return out;
}

// pemDER is the DER of a PEM private key as PKCS #8, which WebCrypto
// imports: a PKCS #1 RSA key or a SEC 1 EC key is wrapped.
function pemDER(pem, alg) {
  const label = (/-----BEGIN ([A-Z ]+)-----/.exec(pem) || [])[1];
  const der = new Uint8Array(encoding.b64decode(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'std'));
  const tlv = (tag, body) => {
    const n = body.length;
    const len = n < 128 ? [n] : n < 256 ? [0x81, n] : [0x82, n >> 8, n & 255];
    return [tag].concat(len, body);
  };
  const wrap = (algID) => new Uint8Array(tlv(0x30, [0x02, 0x01, 0x00].concat(tlv(0x30, algID), tlv(0x04, Array.from(der))))).buffer;
  if (label === 'RSA PRIVATE KEY') {
    return wrap([0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00]);
  }
  if (label === 'EC PRIVATE KEY') {
    const curve = { ES256: [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07], ES384: [0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22], ES512: [0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23] }[alg];
    return wrap([0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01].concat(curve));
  }
  if (label !== 'PRIVATE KEY') throw new Error('a PEM private key (PKCS #8, PKCS #1 RSA or SEC 1 EC) for ' + alg + ', got ' + (label || 'no PEM block'));
  return der.buffer;
}

// jwtAlgs are WebCrypto's names of the JWT algorithms.
function webAlg(alg) {
  const hash = 'SHA-' + alg.slice(2);
  switch (alg.slice(0, 2)) {
    case 'HS': return { imp: { name: 'HMAC', hash: hash }, sign: { name: 'HMAC' } };
    case 'RS': return { imp: { name: 'RSASSA-PKCS1-v1_5', hash: hash }, sign: { name: 'RSASSA-PKCS1-v1_5' } };
    case 'PS': return { imp: { name: 'RSA-PSS', hash: hash }, sign: { name: 'RSA-PSS', saltLength: Number(alg.slice(2)) / 8 } };
  }
  return { imp: { name: 'ECDSA', namedCurve: { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' }[alg] }, sign: { name: 'ECDSA', hash: hash } };
}

// jwtKeys holds each jwt step's imported key, once per VU.
const jwtKeys = {};

function jwtKey(t) {
  if (!jwtKeys[t.key_env]) {
    const w = webAlg(t.alg);
    const material = t.alg.startsWith('HS') ? utf8(KEYS[t.key_env]) : pemDER(KEYS[t.key_env], t.alg);
    jwtKeys[t.key_env] = crypto.subtle.importKey(t.alg.startsWith('HS') ? 'raw' : 'pkcs8', material, w.imp, false, ['sign']);
  }
  return jwtKeys[t.key_env];
}

// resign makes the fresh token of tok at nowNs: iat and nbf now, exp now
// + its lifetime (exp − iat, or − nbf, or − the recorded ts; or ttl),
// every other byte of header and claims kept, alg the key's, kid set when
// asked; signed with the key. It throws when tok cannot be re-signed.
async function resign(t, tok, nowNs, recNs) {
  const parts = tok.split('.');
  const header = b64d(parts[0]);
  const payload = b64d(parts[1]);
  const hm = topLevel(header);
  const pm = topLevel(payload);
  if (!hm || !pm) throw new Error('not a JWT of JSON objects');
  const num = (name) => {
    if (!(name in pm)) return null;
    const raw = payload.slice(pm[name].start, pm[name].end);
    return /^-?[0-9]/.test(raw) ? Number(raw) : null;
  };
  const nowS = Number(nowNs / 1000000000n);
  const iat = num('iat');
  const nbf = num('nbf');
  const exp = num('exp');
  let life = t.ttl_s;
  if (life === 0 && exp !== null) {
    if (iat !== null) life = Math.trunc(exp - iat);
    else if (nbf !== null) life = Math.trunc(exp - nbf);
    else if (recNs !== null) life = Math.trunc(exp) - Number(recNs / 1000000000n);
    else throw new Error('no iat, nbf or recorded ts to tell the lifetime from; set ttl');
    if (life <= 0) throw new Error('lifetime ' + life + 's is not positive; set ttl');
  }
  const set = {};
  if (iat !== null) set.iat = String(nowS);
  if (nbf !== null) set.nbf = String(nowS);
  let until = 0;
  if (exp !== null || t.ttl_s > 0) {
    set.exp = String(nowS + life);
    until = (nowS + life) * 1000;
  }
  const newPayload = setTopLevel(payload, pm, set, exp === null && t.ttl_s > 0 ? { exp: set.exp } : {});
  const hset = { alg: JSON.stringify(t.alg) };
  if (t.kid) hset.kid = JSON.stringify(t.kid);
  const newHeader = setTopLevel(header, hm, hset, t.kid ? { kid: hset.kid } : {});
  const signing = b64e(newHeader) + '.' + b64e(newPayload);
  const sig = await crypto.subtle.sign(webAlg(t.alg).sign, await jwtKey(t), utf8(signing));
  return { token: signing + '.' + b64e(sig), exp: until };
}

// jwtCache holds a VU's re-signed tokens by recorded token, each until
// reuse ends (or half its new lifetime, whichever is first).
const jwtCache = new Map();

async function jwtToken(t, tok, req, ctx) {
  if (tok.length < 10 || !jwtRE.test(tok)) return null;
  const nowMs = Number(ctx.nowNs / 1000000n);
  let s = jwtCache.get(t.key_env + ' ' + tok);
  if (!s || nowMs >= s.until) {
    s = { until: nowMs + t.reuse_ms };
    try {
      const r = await resign(t, tok, ctx.nowNs, req.ts ? BigInt(req.ts) : null);
      s.token = r.token;
      if (r.exp && s.until > nowMs + (r.exp - nowMs) / 2) s.until = nowMs + (r.exp - nowMs) / 2;
    } catch (e) {
      s.bad = true;
    }
    if (jwtCache.size >= 10000) jwtCache.clear();
    jwtCache.set(t.key_env + ' ' + tok, s);
  }
  if (s.bad) {
    ctx.failed = true;
    return null;
  }
  ctx.changed = true;
  return s.token;
}

async function applyJWT(t, req, ctx) {
  for (const k of Object.keys(req.headers)) {
    const v = req.headers[k];
    if (hasName(t.headers, k)) {
      const prefix = v.indexOf(' ') + 1;
      const tok = await jwtToken(t, v.slice(prefix), req, ctx);
      if (tok !== null) req.headers[k] = v.slice(0, prefix) + tok;
    } else if (t.cookies && k.toLowerCase() === 'cookie') {
      const tokens = {};
      for (const part of v.split(';')) {
        const val = part.slice(part.indexOf('=') + 1).trim();
        if (part.indexOf('=') >= 0) tokens[val] = await jwtToken(t, val, req, ctx);
      }
      const nv = rewriteCookies(v, (_, value) => tokens[value]);
      if (nv !== null) req.headers[k] = nv;
    }
  }
  if (t.query.length > 0 && req.uri.indexOf('?') >= 0) {
    const tokens = {};
    for (const p of req.uri.slice(req.uri.indexOf('?') + 1).split('&')) {
      const eq = p.indexOf('=');
      if (eq >= 0 && t.query.indexOf(p.slice(0, eq)) >= 0) tokens[p] = await jwtToken(t, p.slice(eq + 1), req, ctx);
    }
    const uri = rewriteQuery(req.uri, (name, value) => tokens[name + '=' + value]);
    if (uri !== null) req.uri = uri;
  }
  if (t.json.length > 0 && isJSON(req.body)) {
    const tokens = {};
    walkJSON(req.body, (keys, start, end) => {
      if (t.json.some((p) => atPath(p, keys)) && req.body[start] === '"') tokens[req.body.slice(start + 1, end - 1)] = null;
      return true;
    });
    for (const tok of Object.keys(tokens)) tokens[tok] = await jwtToken(t, tok, req, ctx);
    const body = rewriteJSON(req.body, (keys, raw, quoted) => (quoted && t.json.some((p) => atPath(p, keys)) ? tokens[raw] : null));
    if (body !== null) req.body = body;
  }
}

// ---- headers, query, path, host ----

function applyHeaders(t, req, ctx) {
  for (const [from, to] of t.rename) {
    const k = headerKey(req.headers, from);
    if (k !== null) {
      const v = req.headers[k];
      delete req.headers[k];
      req.headers[to] = v;
      ctx.changed = true;
    }
  }
  for (const name of t.remove) {
    const k = headerKey(req.headers, name);
    if (k !== null) {
      delete req.headers[k];
      ctx.changed = true;
    }
  }
  for (const [name, value] of t.set) {
    const k = headerKey(req.headers, name);
    req.headers[k === null ? name : k] = value;
    ctx.changed = true;
  }
}

function applyQuery(t, req, ctx) {
  const q = req.uri.indexOf('?');
  const path = q < 0 ? req.uri : req.uri.slice(0, q);
  const done = t.set.map(() => false);
  const params = [];
  if (q >= 0) {
    for (const p of req.uri.slice(q + 1).split('&')) {
      const eq = p.indexOf('=');
      const name = eq < 0 ? p : p.slice(0, eq);
      if (t.remove.indexOf(name) >= 0) continue;
      const k = t.set.findIndex((s) => s[0] === name);
      if (k < 0) {
        params.push(p);
      } else if (!done[k]) {
        done[k] = true;
        params.push(name + '=' + t.set[k][1]);
      }
    }
  }
  t.set.forEach((s, k) => {
    if (!done[k]) params.push(s[0] + '=' + s[1]);
  });
  const uri = params.length > 0 ? path + '?' + params.join('&') : path;
  if (uri !== req.uri) {
    req.uri = uri;
    ctx.changed = true;
  }
}

function applyPath(t, req, ctx) {
  const q = req.uri.indexOf('?');
  const path = q < 0 ? req.uri : req.uri.slice(0, q);
  if (path.startsWith(t.prefix)) {
    req.uri = t.to + req.uri.slice(t.prefix.length);
    ctx.changed = true;
  }
}

// ---- correlate and cookies: learned from the live answers ----

// session is what the VU learned in the current iteration: per step, the
// recorded values' live counterparts, and the cookie jar.
let session = { learned: {}, jar: {} };

const tokenByte = /[A-Za-z0-9_-]/;

// replaceTokens replaces the values of map (recorded → live) in s, whole
// tokens only; null when none was found.
function replaceTokens(s, map) {
  if (!s || map.size === 0) return null;
  let out = '';
  let at = 0;
  let changed = false;
  for (let i = 0; i < s.length;) {
    let hit = null;
    let hitAt = s.length;
    for (const [from, to] of map) {
      for (let j = s.indexOf(from, i); j >= 0 && j < hitAt; j = s.indexOf(from, j + 1)) {
        if ((j === 0 || !tokenByte.test(s[j - 1])) && (j + from.length >= s.length || !tokenByte.test(s[j + from.length]))) {
          hit = [from, to];
          hitAt = j;
          break;
        }
      }
    }
    if (hit === null) break;
    out += s.slice(at, hitAt) + hit[1];
    i = hitAt + hit[0].length;
    at = i;
    changed = true;
  }
  return changed ? out + s.slice(at) : null;
}

function applyCorrelate(t, i, req, ctx) {
  const map = session.learned[i];
  if (!map) return;
  const uri = replaceTokens(req.uri, map);
  if (uri !== null) {
    req.uri = uri;
    ctx.changed = true;
  }
  for (const k of Object.keys(req.headers)) {
    const v = replaceTokens(req.headers[k], map);
    if (v !== null) {
      req.headers[k] = v;
      ctx.changed = true;
    }
  }
  if (typeof req.body === 'string') {
    const body = replaceTokens(req.body, map);
    if (body !== null) {
      req.body = body;
      ctx.changed = true;
    }
  }
}

function observeCorrelate(t, i, r, res) {
  const rec = r.learn && r.learn[i];
  if (rec === undefined || rec === null) return;
  let live = null;
  if (t.header) {
    const k = headerKey(res.headers, t.header);
    live = k === null ? null : String(res.headers[k]);
  } else {
    live = jsonAt(typeof res.body === 'string' ? res.body : '', t.json);
  }
  if (live === null || live === '' || /[\r\n\0]/.test(live)) {
    transformFailed.add(1, { transform: t.name }); // never seen live: the recorded value stays
    return;
  }
  if (live !== rec) {
    if (!session.learned[i]) session.learned[i] = new Map();
    session.learned[i].set(rec, live);
  }
}

function applyCookies(req, ctx) {
  const k = headerKey(req.headers, 'Cookie');
  if (k === null) return;
  const v = rewriteCookies(req.headers[k], (name, value) => (name in session.jar && session.jar[name] !== value ? session.jar[name] : null));
  if (v !== null) {
    req.headers[k] = v;
    ctx.changed = true;
  }
}

function observeCookies(res) {
  for (const name of Object.keys(res.cookies || {})) {
    const c = res.cookies[name];
    const value = c.length > 0 ? String(c[c.length - 1].value).trim() : '';
    if (!/[\r\n\0;]/.test(value)) session.jar[name] = value;
  }
}

// ---- the chain ----

// transformRequest applies the chain to req ({method, base, uri, headers,
// body, ts}) in place.
async function transformRequest(req) {
  const ctx = { nowNs: BigInt(Date.now()) * 1000000n };
  for (let i = 0; i < TRANSFORMS.length; i++) {
    const t = TRANSFORMS[i];
    ctx.changed = false;
    ctx.failed = false;
    switch (t.kind) {
      case 'timestamps': applyTimestamps(t, req, ctx); break;
      case 'jwt': await applyJWT(t, req, ctx); break;
      case 'headers': applyHeaders(t, req, ctx); break;
      case 'query': applyQuery(t, req, ctx); break;
      case 'path': applyPath(t, req, ctx); break;
      case 'host': req.headers[headerKey(req.headers, 'Host') || 'Host'] = t.host; ctx.changed = true; break;
      case 'correlate': applyCorrelate(t, i, req, ctx); break;
      case 'cookies': applyCookies(req, ctx); break;
    }
    if (ctx.changed) transformChanged.add(1, { transform: t.name });
    if (ctx.failed) transformFailed.add(1, { transform: t.name });
  }
}

// observeAnswer lets the learning transforms learn from the live answer
// to the request r of the data file.
function observeAnswer(r, res) {
  if (!res.status) return; // no answer: nothing to learn, as replay observes answers only
  for (let i = 0; i < TRANSFORMS.length; i++) {
    const t = TRANSFORMS[i];
    if (t.kind === 'correlate') observeCorrelate(t, i, r, res);
    if (t.kind === 'cookies') observeCookies(res);
  }
}
