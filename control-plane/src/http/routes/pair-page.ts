import type { AppContext } from '../context.js';
import type { TypedApp } from '../typed-app.js';

// The RFC 8628 verification page a host opens to approve a rig's pairing code. It is a thin form over the
// public API (lookup, then approve): no server-side session, the credential stays in the browser tab.
const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Ark: approve a machine</title>
<style>body{font:16px system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}label{display:block;margin:.8rem 0 .2rem}
input{width:100%;padding:.4rem;font:inherit;box-sizing:border-box}button{margin-top:1rem;padding:.5rem 1rem;font:inherit}
pre{background:#f4f4f4;padding:.6rem;white-space:pre-wrap}.code{text-transform:uppercase;letter-spacing:.2em}input.box{width:auto}</style></head>
<body><h1>Approve a machine</h1>
<p>Enter the code <code>ark-agent pair</code> printed on your rig, and a session token or an API key with the
<code>host</code> scope (from <code>POST /api/v1/auth/sessions</code> or your account's API keys).</p>
<p>Signed in to the web console? <a id="console" href="/console/pair">Approve it there</a> instead.</p>
<form id="f"><label for="code">Pairing code</label><input id="code" class="code" maxlength="32" autocomplete="off" required>
<label for="token">Session token or host API key</label><input id="token" type="password" autocomplete="off" required>
<label><input id="live" class="box" type="checkbox" checked> List the machine's offer as soon as it is healthy (go live)</label>
<button id="look" type="button">Look up</button> <button id="ok" type="submit" disabled>Approve</button></form>
<pre id="out" aria-live="polite"></pre>
<script>
const $ = (id) => document.getElementById(id);
$('code').value = new URLSearchParams(location.search).get('code') || '';
if ($('code').value) $('console').href = '/console/pair?code=' + encodeURIComponent($('code').value);
const call = async (path, body, extra) => {
  const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer ' + $('token').value.trim(), ...extra }, body: JSON.stringify(body) });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((json.error && json.error.message) || ('HTTP ' + res.status));
  return json;
};
$('look').onclick = async () => {
  try { const r = await call('/api/v1/hosts/pairings/lookup', { user_code: $('code').value });
    $('out').textContent = 'Machine: ' + JSON.stringify(r.summary, null, 2) + '\\nCode valid until ' + r.expires_at; $('ok').disabled = false;
  } catch (e) { $('out').textContent = 'Lookup failed: ' + e.message; }
};
$('f').onsubmit = async (event) => {
  event.preventDefault();
  try { const r = await call('/api/v1/hosts/pairings/approve', { user_code: $('code').value, go_live: $('live').checked }, { 'idempotency-key': crypto.randomUUID() });
    $('out').textContent = 'Approved. The rig enrolls at its next poll.\\n' + JSON.stringify(r, null, 2); $('ok').disabled = true;
  } catch (e) { $('out').textContent = 'Approval failed: ' + e.message; }
};
</script></body></html>`;

export function registerPairPageRoutes(app: TypedApp, _ctx: AppContext): void {
  app.get('/pair', { config: { auth: 'public' }, schema: { hide: true } }, async (_request, reply) =>
    // Its strict content security policy (the page's own script and style by hash) comes from security-headers.ts.
    reply.type('text/html; charset=utf-8').header('x-frame-options', 'DENY').send(PAGE),
  );
}
