// Package disttest tests how fleetaudit is distributed, with the real tools
// users run it through: the pre-commit hook (.pre-commit-hooks.yaml) under
// pre-commit itself, and the GitHub Action (action.yml) and example
// workflow under actionlint. It holds no code; its tests read the repo.
package disttest
