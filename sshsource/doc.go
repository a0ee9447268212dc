package sshsource
