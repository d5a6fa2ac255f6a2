module github.com/capwin/capwin/node-components

go 1.26
