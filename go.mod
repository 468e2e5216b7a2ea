module github.com/rocone/rocone

go 1.26
