module github.com/retryhttp/retryhttp/redisbudget

go 1.25

replace github.com/retryhttp/retryhttp => ../

require (
	github.com/redis/go-redis/v9 v9.12.1
	github.com/retryhttp/retryhttp v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
