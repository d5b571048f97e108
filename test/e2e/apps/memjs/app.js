// An application as a team writes one with memjs, the Node.js memcached client: it reads the
// connection Secret mounted at /etc/memcached, authenticates with SASL (PLAIN, over the binary
// protocol, memjs's only protocol) with the Secret's username and password, sets app-key, gets
// it back and prints one line, "ok: ..." or "error: ..." (exit code 1), also to
// /dev/termination-log. With --wrong-password it sends the password with one character more,
// as a client holding stale or mistyped credentials would.
'use strict';

const fs = require('fs');
const path = require('path');
const memjs = require('memjs');

const SECRET = '/etc/memcached';

function secret(key) {
  try {
    return fs.readFileSync(path.join(SECRET, key), 'utf8').trim();
  } catch (e) {
    return '';
  }
}

async function run(wrongPassword) {
  const endpoint = secret('endpoint');
  const host = secret('host');
  const port = secret('port');
  const username = secret('username');
  let password = secret('password');
  if (!endpoint || !host || !port || !username || !password) {
    throw new Error(`the Secret at ${SECRET} lacks endpoint, host, port, username or password`);
  }
  if (wrongPassword) {
    password += 'x';
  }
  // retries 0: a refusal is reported, not retried; memjs logs what it retries to the console.
  const client = memjs.Client.create(`${host}:${port}`, {
    username, password, retries: 0, timeout: 5, conntimeout: 5, logger: { log() {} },
  });
  try {
    const value = `set at ${Date.now() / 1000}`;
    if (!(await client.set('app-key', value, {}))) {
      throw new Error(`set app-key on ${endpoint}: not stored`);
    }
    const got = await client.get('app-key');
    if (!got.value || got.value.toString() !== value) {
      throw new Error(`get app-key on ${endpoint}: got ${got.value}, set ${value}`);
    }
  } finally {
    client.close();
  }
  const version = require('memjs/package.json').version;
  return `ok: set and got app-key on ${endpoint} (sasl) with memjs ${version} on Node.js ${process.version}`;
}

async function main() {
  let line;
  let code = 0;
  try {
    line = await run(process.argv.includes('--wrong-password'));
  } catch (e) {
    // memjs rejects with a string when the server refuses the credentials.
    line = `error: ${e instanceof Error ? e.message : e}`;
    code = 1;
  }
  console.log(line);
  try {
    fs.writeFileSync('/dev/termination-log', line + '\n');
  } catch (e) {
    // Not in a pod.
  }
  process.exit(code);
}

main();
