from tefq.cli import main

main()
