from tefq.entry import main

main()
