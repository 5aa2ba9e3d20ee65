// Starts `warmroute engine` on ephemeral loopback ports and stops it; shared by the SDK tests.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const bin = process.env.WARMROUTE_BIN;
if (!bin) throw new Error('WARMROUTE_BIN must point to the warmroute binary');

// Resolves to { urls: ['http://127.0.0.1:PORT', ...], stop() } once every replica listens.
export async function startEngine(args = []) {
  const child = spawn(bin, ['engine', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const urls = [];
  const want = Number(args[args.indexOf('--replicas') + 1]) || 1;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('engine did not start in 20 s')), 20000);
    child.on('exit', (code) => reject(new Error(`engine exited early with ${code}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = /^replica (\d+) listening on (\S+)$/.exec(line);
      if (m) urls.push(`http://${m[2]}`);
      if (urls.length === want) { clearTimeout(timer); resolve(); }
    });
  });
  return {
    urls,
    stop: () => new Promise((resolve) => {
      child.removeAllListeners('exit');
      child.on('exit', resolve);
      child.kill('SIGTERM');
    }),
  };
}

// Starts `warmroute serve` in front of `backends` (URLs); resolves to { url, stop() } once it
// listens. `args` are extra flags (e.g. ['--policy', 'round_robin']).
export async function startGateway(backends, args = []) {
  const flags = ['serve', '--port', '0', '--threads', '2', '--log-level', 'warn', '--access-log', 'off',
    ...args];
  for (const b of backends) flags.push('--backend', b);
  const child = spawn(bin, flags, { stdio: ['ignore', 'pipe', 'inherit'] });
  let url;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('gateway did not start in 20 s')), 20000);
    child.on('exit', (code) => reject(new Error(`gateway exited early with ${code}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = /^warmroute serve listening on (\S+) /.exec(line);
      if (m) { url = `http://${m[1]}`; clearTimeout(timer); resolve(); }
    });
  });
  return {
    url,
    stop: () => new Promise((resolve) => {
      child.removeAllListeners('exit');
      child.on('exit', resolve);
      child.kill('SIGTERM');
    }),
  };
}
