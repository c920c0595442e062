// The top frames of a CPU profile by self time, as a markdown table (not a benchmark: `bench/run.ts` skips it).
//   node --import tsx bench/top-frames.ts <file.cpuprofile> [--top 10] [--inclusive]
//   node --import tsx bench/top-frames.ts <file.heapprofile> [--top 10]   (allocation sites by bytes, BENCH_HEAP=1)
// Self time is the time a function ran itself (not its callees), as a share of the samples that were not idle;
// functions are grouped by name and file. With --inclusive, a second table by inclusive time as well: the
// share of busy samples in which the function was anywhere on the stack (counted once per sample, so
// recursion does not count twice). `(program)` is V8 and native work outside JavaScript frames,
// `(garbage collector)` is GC; native functions (writev, writeBuffer) are system calls' user-side entries.
import { readFileSync } from 'node:fs';
import { flags, intOption } from './lib.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface Profile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}

/** `[self %, function, where]` rows, the busiest first, and the busy milliseconds they share. */
export function topFrames(profile: Profile, top: number): { busyMs: number; rows: string[][] } {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const self = new Map<string, { us: number; name: string; where: string }>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id)!;
    if (frame.functionName === '(idle)') return;
    const us = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
    const where = shortUrl(frame.url);
    const key = `${frame.functionName}\n${where}`;
    const entry = self.get(key) ?? { us: 0, name: frame.functionName || '(anonymous)', where };
    entry.us += us;
    self.set(key, entry);
    busy += us;
  });
  const rows = [...self.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
    .map((entry) => [`${((entry.us / busy) * 100).toFixed(1)} %`, `\`${entry.name}\``, entry.where ? `\`${entry.where}\`` : 'native']);
  return { busyMs: busy / 1000, rows };
}

/** `[inclusive %, function, where]` rows: the share of busy samples with the function anywhere on the stack. */
export function inclusiveFrames(profile: Profile, top: number): { busyMs: number; rows: string[][] } {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const total = new Map<string, { us: number; name: string; where: string }>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    if (frames.get(id)!.functionName === '(idle)') return;
    const us = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
    busy += us;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = frames.get(at)!;
      if (frame.functionName === '(root)') continue;
      const where = shortUrl(frame.url);
      const key = `${frame.functionName}\n${where}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const entry = total.get(key) ?? { us: 0, name: frame.functionName || '(anonymous)', where };
      entry.us += us;
      total.set(key, entry);
    }
  });
  const rows = [...total.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
    .map((entry) => [`${((entry.us / busy) * 100).toFixed(1)} %`, `\`${entry.name}\``, entry.where ? `\`${entry.where}\`` : 'native']);
  return { busyMs: busy / 1000, rows };
}

interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}
interface HeapProfile {
  head: HeapNode;
}

/** `[share of bytes, function, where]` rows of a sampling heap profile by bytes allocated in the function itself. */
export function topAllocations(profile: HeapProfile, top: number): { totalBytes: number; rows: string[][] } {
  const self = new Map<string, { bytes: number; name: string; where: string }>();
  let total = 0;
  const walk = (node: HeapNode) => {
    if (node.selfSize > 0) {
      const where = shortUrl(node.callFrame.url);
      const key = `${node.callFrame.functionName}\n${where}`;
      const entry = self.get(key) ?? { bytes: 0, name: node.callFrame.functionName || '(anonymous)', where };
      entry.bytes += node.selfSize;
      self.set(key, entry);
      total += node.selfSize;
    }
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const rows = [...self.values()]
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, top)
    .map((entry) => [`${((entry.bytes / total) * 100).toFixed(1)} %`, `\`${entry.name}\``, entry.where ? `\`${entry.where}\`` : 'native']);
  return { totalBytes: total, rows };
}

function shortUrl(url: string): string {
  if (!url) return '';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) return url.slice(modules + 'node_modules/'.length);
  const src = url.search(/\/(src|bench|dist)\//);
  if (src >= 0) return url.slice(src + 1);
  return url;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = flags().positional[0];
  if (!file) {
    console.error('Usage: node --import tsx bench/top-frames.ts <file.cpuprofile> [--top 10]');
    process.exit(2);
  }
  const top = intOption('top', 'BENCH_TOP', 10);
  if (file.endsWith('.heapprofile')) {
    const { totalBytes, rows } = topAllocations(JSON.parse(readFileSync(file, 'utf8')) as HeapProfile, top);
    console.log(`${file}: ${(totalBytes / 1024 / 1024).toFixed(1)} MiB allocated (sampled)\n`);
    console.log(['| of bytes | function | where |', '| ---: | --- | --- |', ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n'));
  } else {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    const { busyMs, rows } = topFrames(profile, top);
    console.log(`${file}: ${busyMs.toFixed(0)} ms busy\n`);
    console.log(['| self | function | where |', '| ---: | --- | --- |', ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n'));
    if (flags().named.has('inclusive')) {
      const inclusive = inclusiveFrames(profile, top).rows;
      console.log(['', '| inclusive | function | where |', '| ---: | --- | --- |', ...inclusive.map((row) => `| ${row.join(' | ')} |`)].join('\n'));
    }
  }
}
