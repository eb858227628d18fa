// Package redisinfo reads what a Redis server reports of its own cost:
// commands run and their time (INFO commandstats) and process CPU (INFO
// cpu). The queue's cost test and make bench share it.
package redisinfo
