// Package config holds the configuration of each optional feature, one
// file a feature: the feature's package builds its options on it, and the
// root package reads it, without either importing the other.
package config
