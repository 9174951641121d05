// Starts dynalite, an implementation of DynamoDB, in memory on a free
// loopback port, and prints that port on a line of its own once it
// listens. It stops when its standard input closes, so that it never
// outlives the Go process that started it.
'use strict'
const dynalite = require('dynalite')

const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(server.address().port + '\n')
})
process.stdin.on('end', () => process.exit(0))
process.stdin.on('error', () => process.exit(0))
process.stdin.resume()
