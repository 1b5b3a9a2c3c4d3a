module github.com/approxtune/approxtune

go 1.26.0

require (
	github.com/chzyer/readline v1.5.1 // indirect
	golang.org/x/sys v0.49.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
