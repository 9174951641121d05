// Starts Azurite's blob service, an implementation of Azure Blob Storage,
// in memory on a free loopback port, and prints that port on a line of its
// own once it listens. It stops when its standard input closes, so that it
// never outlives the Go process that started it.
'use strict'
const net = require('net')
const os = require('os')
const path = require('path')
const { spawn } = require('child_process')

const blob = path.join(__dirname, 'node_modules', 'azurite', 'dist', 'src', 'blob', 'main.js')

// freePort finds a port that is free now; Azurite binds it just after, and
// a start that loses it to another process is tried again.
function freePort () {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.on('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = s.address().port
      s.close(() => resolve(port))
    })
  })
}

let child = null
async function start (tries) {
  const port = await freePort()
  let started = false
  let out = ''
  child = spawn(process.execPath, [blob, '--blobHost', '127.0.0.1', '--blobPort', String(port),
    '--inMemoryPersistence', '--skipApiVersionCheck', '--loose'],
  { stdio: ['ignore', 'pipe', 'inherit'], cwd: os.tmpdir() })
  child.stdout.on('data', (d) => {
    out += d
    if (!started && out.includes('successfully listens')) {
      started = true
      process.stdout.write(port + '\n')
    }
  })
  child.on('exit', (code) => {
    if (started) {
      process.exit(code === null ? 1 : code)
    } else if (tries > 1) {
      start(tries - 1)
    } else {
      process.stderr.write(out)
      process.exit(1)
    }
  })
}

function stop () {
  if (!child || child.exitCode !== null) process.exit(0)
  child.removeAllListeners('exit')
  child.on('exit', () => process.exit(0))
  child.kill('SIGKILL')
}
process.stdin.on('end', stop)
process.stdin.on('error', stop)
process.stdin.resume()
start(5)
